import Foundation
import GRDB
import Metrics
import ParleyRaft
import ParleyRooms

/// The one SQLite database of a node: every group's Raft log, hard state and latest snapshot.
///
/// WAL mode with `synchronous = FULL`, so `commit` returns only after the batch is on disk; one batch is one
/// transaction and one fsync however many groups it touches (group commit).
public final class NodeDatabase: Sendable {
    private let queue: DatabaseQueue
    public let path: String
    /// fsync on (FULL) or off (OFF) for the batches that need it.
    private let durable: Bool
    /// Time of each group commit (the transaction and its fsync), `parley_storage_commit_seconds`.
    private let commitTime: Metrics.Timer

    /// The histogram `commitTime` feeds; its buckets are set where the node makes its metrics factory.
    public static let commitTimeMetric = "parley_storage_commit_seconds"

    /// Opens (creating if needed) the database at `path`. `durable: false` skips fsync (tests, benchmarks
    /// that say so); a node always runs durable. Group-commit latency is recorded through `metrics`.
    public init(path: String, durable: Bool = true, metrics: any MetricsFactory = NOOPMetricsHandler.instance) throws {
        commitTime = Metrics.Timer(label: Self.commitTimeMetric, factory: metrics)
        var config = Configuration()
        config.journalMode = .wal
        config.label = "parley-node"
        self.path = path
        self.durable = durable
        queue = try DatabaseQueue(path: path, configuration: config)
        // Set after the queue exists: GRDB switches a WAL database to `synchronous = NORMAL` (no sync at commit)
        // once the connection is open, after `prepareDatabase` has run — a setting made there does not last.
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF")
            // Every group commit rewrites the same few hot pages (the tails of the log and history trees).
            // A checkpoint copies only the newest copy of each page to the database file, so checkpointing
            // every 32 MiB of WAL instead of SQLite's 4 MiB writes those pages (and syncs the file) far less
            // often; the larger page cache keeps the trees' inner pages from being read back.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.checkpointPages)")
            try db.execute(sql: "PRAGMA cache_size = -\(Self.cacheKiB)")
        }
        try Self.migrator.migrate(queue)
        history = RoomHistoryStore(queue: queue)
    }

    /// WAL pages between automatic checkpoints (SQLite's default is 1,000).
    static let checkpointPages = 8_192
    /// Page cache per connection, KiB (SQLite's default is 2,000).
    static let cacheKiB = 32_768

    /// The durable room history kept in this database.
    public let history: RoomHistoryStore

    private static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1-raft") { db in
            try db.execute(sql: """
                CREATE TABLE raft_group (
                    group_id INTEGER PRIMARY KEY,
                    term INTEGER NOT NULL, vote INTEGER NOT NULL, commit_index INTEGER NOT NULL);
                CREATE TABLE raft_entry (
                    group_id INTEGER NOT NULL, idx INTEGER NOT NULL, term INTEGER NOT NULL,
                    kind INTEGER NOT NULL, data BLOB NOT NULL,
                    PRIMARY KEY (group_id, idx)) WITHOUT ROWID;
                CREATE TABLE raft_snapshot (
                    group_id INTEGER PRIMARY KEY, idx INTEGER NOT NULL, term INTEGER NOT NULL,
                    conf_state BLOB NOT NULL, data BLOB NOT NULL);
                """)
        }
        RoomHistoryStore.migrate(&m)
        return m
    }

    // MARK: Groups

    /// Ids of the groups held on this node, ascending.
    public func groupIDs() throws -> [GroupID] {
        try queue.read { db in
            try Int64.fetchAll(db, sql: "SELECT group_id FROM raft_group ORDER BY group_id").map(GroupID.init)
        }
    }

    /// Creates a group whose founding membership is `confState` and makes that durable at once.
    public func createGroup(_ group: GroupID, bootstrap confState: ConfState) throws -> DurableGroupLog {
        guard try !groupIDs().contains(group) else { throw StorageError.groupExists(group) }
        let memory = MemoryStorage(bootstrap: confState)
        var write = GroupWrite()
        write.snapshot = try memory.snapshot()
        write.snapshotReplacesLog = true
        write.hardState = memory.persistedHardState
        var batch = StorageBatch()
        batch.update(group) { $0 = write }
        try commit(batch)
        return DurableGroupLog(group: group, memory: memory)
    }

    /// Creates an empty group that will be brought up to date by its leader (a replica added later).
    public func createEmptyGroup(_ group: GroupID) throws -> DurableGroupLog {
        guard try !groupIDs().contains(group) else { throw StorageError.groupExists(group) }
        var write = GroupWrite()
        write.hardState = HardState()
        var batch = StorageBatch()
        batch.update(group) { $0 = write }
        try commit(batch)
        return DurableGroupLog(group: group, memory: MemoryStorage())
    }

    /// Loads a group as it was last committed, checking that its log is whole.
    public func openGroup(_ group: GroupID) throws -> DurableGroupLog {
        try queue.read { db in
            guard let hs = try Row.fetchOne(db, sql: "SELECT term, vote, commit_index FROM raft_group WHERE group_id = ?",
                                            arguments: [Int64(bitPattern: group)]) else {
                throw StorageError.unknownGroup(group)
            }
            let memory = MemoryStorage()
            if let row = try Row.fetchOne(db, sql: "SELECT idx, term, conf_state, data FROM raft_snapshot WHERE group_id = ?",
                                          arguments: [Int64(bitPattern: group)]) {
                let meta = SnapshotMetadata(index: LogIndex(bitPattern: row[0]), term: Term(bitPattern: row[1]),
                                            confState: try Self.membership([UInt8](row[2] as Data), group: group))
                try memory.applySnapshot(Snapshot(metadata: meta, data: [UInt8](row[3] as Data)))
            }
            var expected = try memory.lastIndex() + 1
            var entries: [Entry] = []
            let cursor = try Row.fetchCursor(db, sql: "SELECT idx, term, kind, data FROM raft_entry WHERE group_id = ? AND idx >= ? ORDER BY idx",
                                             arguments: [Int64(bitPattern: group), Int64(bitPattern: expected)])
            while let row = try cursor.next() {
                let index = LogIndex(bitPattern: row[0])
                guard index == expected else {
                    throw StorageError.corrupt("group \(group): log jumps from \(expected - 1) to \(index)")
                }
                guard let kind = EntryKind(rawValue: row[2]) else {
                    throw StorageError.corrupt("group \(group): entry \(index) has an unknown kind")
                }
                entries.append(Entry(term: Term(bitPattern: row[1]), index: index, kind: kind, data: [UInt8](row[3] as Data)))
                expected += 1
            }
            try memory.append(entries)
            memory.setHardState(HardState(term: Term(bitPattern: hs[0]), vote: NodeID(bitPattern: hs[1]),
                                          commit: LogIndex(bitPattern: hs[2])))
            return DurableGroupLog(group: group, memory: memory)
        }
    }

    private static func membership(_ bytes: [UInt8], group: GroupID) throws -> ConfState {
        do { return try ConfState(decoding: bytes) } catch {
            throw StorageError.corrupt("group \(group): unreadable membership (\(error))")
        }
    }

    /// Removes a group and all it holds (its replica moved away).
    public func dropGroup(_ group: GroupID) throws {
        try queue.write { db in
            for table in ["raft_entry", "raft_snapshot", "raft_group"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE group_id = ?", arguments: [Int64(bitPattern: group)])
            }
        }
    }

    // MARK: Group commit

    /// Writes the whole batch in one transaction; a crash before it returns leaves none of it half-applied.
    /// When the batch `needsSync`, it is on disk when this returns (one fsync of the WAL). Otherwise (only
    /// commit indexes and history rows) the transaction is not synced by itself: the next synced one makes
    /// it durable too, since the WAL is written in order; until then a crash may lose it, which Raft and
    /// the history replay repair.
    public func commit(_ batch: StorageBatch) throws {
        guard !batch.isEmpty else { return }
        let start = ContinuousClock.now
        defer { commitTime.record(duration: ContinuousClock.now - start) }
        let relaxed = durable && !batch.needsSync
        try queue.writeWithoutTransaction { db in
            guard relaxed else { return try Self.write(batch, in: db) }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            let written = Result { try Self.write(batch, in: db) }
            // FULL again before anything else commits, whatever became of this batch.
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try written.get()
        }
    }

    /// The batch in one transaction.
    private static func write(_ batch: StorageBatch, in db: Database) throws {
        try db.inTransaction {
            for (group, write) in batch.writes where !write.isEmpty {
                try apply(write, to: group, in: db)
            }
            if !batch.history.isEmpty { try RoomHistoryStore.insert(batch.history, in: db) }
            return .commit
        }
    }

    /// SQLite's `synchronous` setting now (2 = FULL, 1 = NORMAL, 0 = OFF); tests check a relaxed commit restores it.
    func synchronousSetting() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    private static func apply(_ write: GroupWrite, to group: GroupID, in db: Database) throws {
        let g = Int64(bitPattern: group)
        if let s = write.snapshot {
            try db.cachedStatement(sql: """
                INSERT INTO raft_snapshot (group_id, idx, term, conf_state, data) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(group_id) DO UPDATE SET idx = excluded.idx, term = excluded.term,
                    conf_state = excluded.conf_state, data = excluded.data
                """).execute(arguments: [g, Int64(bitPattern: s.metadata.index), Int64(bitPattern: s.metadata.term),
                                         Data(s.metadata.confState.encoded()), Data(s.data)])
            if write.snapshotReplacesLog {
                try db.cachedStatement(sql: "DELETE FROM raft_entry WHERE group_id = ?").execute(arguments: [g])
            }
        }
        if let first = write.entries.first {
            try db.cachedStatement(sql: "DELETE FROM raft_entry WHERE group_id = ? AND idx >= ?")
                .execute(arguments: [g, Int64(bitPattern: first.index)])
            let insert = try db.cachedStatement(sql: "INSERT INTO raft_entry (group_id, idx, term, kind, data) VALUES (?, ?, ?, ?, ?)")
            for e in write.entries {
                try insert.execute(arguments: [g, Int64(bitPattern: e.index), Int64(bitPattern: e.term),
                                               Int64(e.kind.rawValue), Data(e.data)])
            }
        }
        if let below = write.compactBelow {
            try db.cachedStatement(sql: "DELETE FROM raft_entry WHERE group_id = ? AND idx < ?")
                .execute(arguments: [g, Int64(bitPattern: below)])
        }
        if let hs = write.hardState {
            try db.cachedStatement(sql: """
                INSERT INTO raft_group (group_id, term, vote, commit_index) VALUES (?, ?, ?, ?)
                ON CONFLICT(group_id) DO UPDATE SET term = excluded.term, vote = excluded.vote,
                    commit_index = excluded.commit_index
                """).execute(arguments: [g, Int64(bitPattern: hs.term), Int64(bitPattern: hs.vote),
                                         Int64(bitPattern: hs.commit)])
        }
    }

    // MARK: Snapshot streaming

    /// Size in bytes of the group's stored snapshot data (0 if none).
    public func snapshotSize(_ group: GroupID) throws -> Int {
        try queue.read { db in
            try Int.fetchOne(db, sql: "SELECT length(data) FROM raft_snapshot WHERE group_id = ?",
                             arguments: [Int64(bitPattern: group)]) ?? 0
        }
    }

    /// Reads `[offset, offset + length)` of the stored snapshot data without loading the rest, so a
    /// snapshot is streamed to a peer in chunks.
    public func snapshotChunk(_ group: GroupID, offset: Int, length: Int) throws -> [UInt8] {
        precondition(offset >= 0 && length >= 0)
        return try queue.read { db in
            let data = try Data.fetchOne(db, sql: "SELECT substr(data, ?, ?) FROM raft_snapshot WHERE group_id = ?",
                                         arguments: [offset + 1, length, Int64(bitPattern: group)])
            return data.map { [UInt8]($0) } ?? []
        }
    }
}

extension NodeDatabase {
    /// Removes one log row behind the storage's back, so tests can prove corruption is detected.
    func deleteEntryForTesting(group: GroupID, index: LogIndex) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM raft_entry WHERE group_id = ? AND idx = ?",
                           arguments: [Int64(bitPattern: group), Int64(bitPattern: index)])
        }
    }
}
