import Foundation
import GRDB
import Metrics
import ParleyRaft
import ParleyRooms
import Synchronization
import ParleyRaftWire

/// The one SQLite database of a node: every group's Raft log, hard state and latest snapshot.
///
/// WAL mode with `synchronous = FULL`, so `commit` returns only after the batch is on disk; one batch is one
/// transaction and one fsync however many groups it touches (group commit). The logs of all groups share
/// one append-only table (`LogRow`), so a commit writes few pages whatever the number of groups.
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
    /// Numbers the log rows.
    private let sequence: LogSequence
    /// Rows of every group's log read by one scan, handed out as the groups are opened (a node opens all of
    /// its groups at start; the table has no per-group index, which would cost a page per group per commit).
    private let unopenedRows = Mutex<[GroupID: [StoredRow]]?>(nil)
    /// A group whose oldest needed log row is this many rows old writes its live entries again (see
    /// `DurableGroupLog`); tests make it small.
    let rewriteAfterRows: Int64
    /// Some group's `log_from` moved since unneeded rows were last all deleted.
    private let unneededRows = Mutex(true)
    /// Rows groups freed (`GroupWrite.deadRows`, and rows below a group's `log_from` found when it was
    /// opened), deleted by key a bounded number at a time with the host's deferred write: a row of a busy
    /// group holds a few KiB in overflow pages, and deleting the 8 MiB of rows behind a snapshot inside the
    /// snapshot's transaction stalled the Raft loop.
    private let freedRows = Mutex<[Int64]>([])
    private let transactions = Mutex(0)
    /// Transactions `commit` has written since the database was opened (tests count them; the commit-time
    /// histogram's count on /metrics is the same figure).
    public var transactionsWritten: Int { transactions.withLock { $0 } }
    /// The node's Raft loops' batches that meet in one transaction (issue 35).
    private let groupCommit = GroupCommit()
    /// Transactions that carried more than one Raft loop's batch.
    public var joinedTransactions: Int { groupCommit.joinedCount }

    public init(path: String, durable: Bool = true, metrics: any MetricsFactory = NOOPMetricsHandler.instance,
                rewriteAfterRows: Int64 = 131_072, checkpointFrames: Int = NodeDatabase.checkpointPages,
                cacheBytes: Int = NodeDatabase.defaultCacheBytes) throws {
        self.rewriteAfterRows = rewriteAfterRows
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
            // The larger page cache keeps the log tree's inner pages from being read back.
            try db.execute(sql: "PRAGMA cache_size = -\(max(64, cacheBytes >> 10))")
            // A WAL that grew while checkpoints fell behind is cut back when it starts again.
            try db.execute(sql: "PRAGMA journal_size_limit = \(Self.walSizeLimitBytes)")
        }
        history = try RoomHistoryStore(path: Self.historyPath(for: path), durable: durable, cacheBytes: cacheBytes)
        try Self.migrator(history: history).migrate(queue)
        // Every group commit rewrites the same few hot pages (the tails of the log tree, the groups' rows); a
        // checkpoint copies only the newest copy of each, so copying every `checkpointFrames` frames instead
        // of SQLite's 1,000 writes those pages (and syncs the file) far less often.
        let checkpointer = try WALCheckpointer(path: path, durable: durable, startFrames: checkpointFrames,
                                               writerFrames: checkpointFrames * 16)
        queue.inDatabase { checkpointer.attach(to: $0) }
        self.checkpointer = checkpointer
        if durable {
            let pageSize = try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096 }
            try Self.reserveWALSpace(path: path + "-wal", bytes: min(Self.walSizeLimitBytes,
                                                                      32 + checkpointFrames * 3 / 2 * (pageSize + 24)))
        }
        sequence = LogSequence(next: try queue.read { db in
            // Past every group's `log_from` as well: a group may have deleted the newest rows (its own, behind
            // a snapshot), and a row numbered below a `log_from` would be skipped when its group is opened.
            try Int64.fetchOne(db, sql: """
                SELECT max(ifnull((SELECT max(seq) FROM raft_log), 0) + 1, ifnull((SELECT max(log_from) FROM raft_group), 0), 1)
                """) ?? 1
        })
    }

    /// Extends the WAL file with zeros to `bytes` (never shortens it, never touches what it holds). An fdatasync
    /// after writing into blocks the file does not have yet also writes the file's block map and inode, which
    /// doubled its time here (215 µs against 105 µs), and every commit paid that until the WAL first started
    /// again, 8,192 frames after each start of the node. SQLite reads zeros past its last frame as no frame, and
    /// after a restart of the WAL it writes over the same blocks; `journal_size_limit` keeps the file this long.
    /// Call while nothing writes the database.
    static func reserveWALSpace(path: String, bytes: Int) throws {
        guard let wal = FileHandle(forUpdatingAtPath: path) else { return }  // made at the first write otherwise
        defer { try? wal.close() }
        var size = Int(try wal.seekToEnd())
        guard size < bytes else { return }
        let zeros = Data(count: 1 << 20)
        while size < bytes {
            let chunk = min(zeros.count, bytes - size)
            try wal.write(contentsOf: chunk == zeros.count ? zeros : zeros.prefix(chunk))
            size += chunk
        }
        try wal.synchronize()
    }

    /// WAL frames (pages) that start a checkpoint (SQLite's automatic checkpoint starts at 1,000).
    public static let checkpointPages = 8_192
    /// The size a WAL is cut back to when it starts again (`journal_size_limit`).
    static let walSizeLimitBytes = 64 << 20
    /// Copies the WAL into the database file away from `commit` (see `WALCheckpointer`).
    private let checkpointer: WALCheckpointer

    deinit {
        queue.inDatabase { checkpointer.detach(from: $0) }
    }

    /// Checkpoints run away from the writer, and the WAL frames they copied (tests).
    var checkpointCounts: (checkpoints: Int, framesCopied: Int) {
        checkpointer.waitUntilIdle()
        return checkpointer.counts
    }
    /// SPEC D1: the page cache of each of the node's two databases (SQLite's default is 2,000 KiB), in bytes;
    /// `--sqlite-cache-bytes`. Pages the writes touch stay in it up to this size.
    public static let defaultCacheBytes = 8 << 20

    /// The durable room history, in a database file of its own beside this one (`historyPath(for:)`).
    public let history: RoomHistoryStore

    /// `DIR/node.sqlite` keeps its room history in `DIR/node-history.sqlite`.
    public static func historyPath(for path: String) -> String {
        let url = URL(fileURLWithPath: path)
        let ext = url.pathExtension
        let base = url.deletingPathExtension().lastPathComponent + "-history"
        return url.deletingLastPathComponent().appendingPathComponent(ext.isEmpty ? base : base + "." + ext).path
    }

    private static func migrator(history: RoomHistoryStore) -> DatabaseMigrator {
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
        m.registerMigration("v2-room-history") { db in try db.execute(sql: RoomHistoryStore.rowPerItemTable) }
        m.registerMigration("v3-raft-log") { db in
            try db.execute(sql: """
                CREATE TABLE raft_log (
                    seq INTEGER PRIMARY KEY, group_id INTEGER NOT NULL,
                    first_idx INTEGER NOT NULL, last_idx INTEGER NOT NULL, entries BLOB NOT NULL);
                ALTER TABLE raft_group ADD COLUMN log_from INTEGER NOT NULL DEFAULT 0;
                """)
            // Each group's entries so far become its first row.
            for g in try Int64.fetchAll(db, sql: "SELECT DISTINCT group_id FROM raft_entry ORDER BY group_id") {
                let rows = try Row.fetchAll(db, sql: "SELECT idx, term, kind, data FROM raft_entry WHERE group_id = ? ORDER BY idx",
                                            arguments: [g])
                let entries = rows.map { row in
                    Entry(term: Term(bitPattern: row[1]), index: LogIndex(bitPattern: row[0]),
                          kind: EntryKind(rawValue: row[2]) ?? .normal, data: [UInt8](row[3] as Data))
                }
                guard let first = entries.first, let last = entries.last else { continue }
                try db.execute(sql: "INSERT INTO raft_log (group_id, first_idx, last_idx, entries) VALUES (?, ?, ?, ?)",
                               arguments: [g, Int64(bitPattern: first.index), Int64(bitPattern: last.index),
                                           Data(LogRow.encode(entries))])
            }
            try db.execute(sql: "DROP TABLE raft_entry")
        }
        m.registerMigration("v4-history-file") { db in
            // History moved to its own file: rows an older node kept here go there.
            let rows = try Row.fetchAll(db, sql: "SELECT room_id, shard, item FROM room_history").map { row in
                do {
                    return RoomHistoryStore.Row(shard: row[1], roomId: row[0], item: try HistoryItem(decoding: [UInt8](row[2] as Data)))
                } catch {
                    throw StorageError.corrupt("an unreadable history row in room \(row[0] as String) (\(error))")
                }
            }
            try history.insertNow(rows)
            try db.execute(sql: "DROP TABLE room_history")
        }
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
        write.logFrom = sequence.upcoming
        var batch = StorageBatch()
        batch.update(group) { $0 = write }
        try commit(batch)
        return DurableGroupLog(group: group, memory: memory, sequence: sequence, logFrom: sequence.upcoming,
                               rewriteAfterRows: rewriteAfterRows, readRows: { try self.logRowBytes($0) })
    }

    /// Creates an empty group that will be brought up to date by its leader (a replica added later).
    public func createEmptyGroup(_ group: GroupID) throws -> DurableGroupLog {
        guard try !groupIDs().contains(group) else { throw StorageError.groupExists(group) }
        var write = GroupWrite()
        write.hardState = HardState()
        write.logFrom = sequence.upcoming
        var batch = StorageBatch()
        batch.update(group) { $0 = write }
        try commit(batch)
        return DurableGroupLog(group: group, memory: MemoryStorage(), sequence: sequence, logFrom: sequence.upcoming,
                               rewriteAfterRows: rewriteAfterRows, readRows: { try self.logRowBytes($0) })
    }

    /// SPEC D1: the entries' bytes of `raft_log` rows by seq, in the order asked (a row not there is left out):
    /// a group reads back the entries it evicted from memory.
    func logRowBytes(_ seqs: [Int64]) throws -> [[UInt8]] {
        guard !seqs.isEmpty else { return [] }
        return try queue.read { db in
            var found: [Int64: [UInt8]] = [:]
            for chunk in stride(from: 0, to: seqs.count, by: 500) {
                let part = Array(seqs[chunk..<min(seqs.count, chunk + 500)])
                let marks = part.map { _ in "?" }.joined(separator: ",")
                for row in try Row.fetchAll(db, sql: "SELECT seq, entries FROM raft_log WHERE seq IN (\(marks))",
                                            arguments: StatementArguments(part)) {
                    found[row[0]] = [UInt8](row[1] as Data)
                }
            }
            return seqs.compactMap { found[$0] }
        }
    }

    /// The group's log rows: from the one scan of the table, or a new scan once a commit made it stale. SPEC
    /// D1: each row is decoded as it is read and its committed entries keep only their index and term (their
    /// data is read back from the row when needed), so opening a node's groups holds their uncommitted tails,
    /// not the whole log table. A row that does not decode keeps its bytes, for `openGroup` to report.
    private func logRows(of group: GroupID) throws -> [StoredRow] {
        if let rows = unopenedRows.withLock({ $0?.removeValue(forKey: group) }) { return rows }
        var all: [GroupID: [StoredRow]] = [:]
        try queue.read { db in
            var kept: [GroupID: (commit: LogIndex, logFrom: Int64)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT group_id, commit_index, log_from FROM raft_group") {
                kept[GroupID(bitPattern: row[0])] = (LogIndex(bitPattern: row[1]), row[2])
            }
            let cursor = try Row.fetchCursor(db, sql: "SELECT seq, group_id, entries FROM raft_log ORDER BY seq")
            while let row = try cursor.next() {
                let seq: Int64 = row[0]
                let id = GroupID(bitPattern: row[1])
                guard let (commit, logFrom) = kept[id], seq >= logFrom else {
                    all[id, default: []].append(StoredRow(seq: seq, entries: []))  // not needed: freed at open
                    continue
                }
                let bytes = [UInt8](row[2] as Data)
                guard let entries = try? LogRow.decode(bytes, group: id, dataThrough: commit) else {
                    all[id, default: []].append(StoredRow(seq: seq, entries: [], unreadable: bytes))
                    continue
                }
                all[id, default: []].append(StoredRow(seq: seq, entries: entries))
            }
        }
        let mine = all.removeValue(forKey: group) ?? []
        unopenedRows.withLock { $0 = all }
        return mine
    }

    /// A `raft_log` row as a group is opened from it.
    struct StoredRow {
        var seq: Int64
        var entries: [Entry]
        var unreadable: [UInt8]? = nil
    }

    /// Loads a group as it was last committed, checking that its log is whole: its rows from `log_from` on,
    /// replayed in order, each replacing what was held from its first index, and kept after the snapshot.
    public func openGroup(_ group: GroupID) throws -> DurableGroupLog {
        let stored = try logRows(of: group)
        return try queue.read { db in
            guard let hs = try Row.fetchOne(db, sql: "SELECT term, vote, commit_index, log_from FROM raft_group WHERE group_id = ?",
                                            arguments: [Int64(bitPattern: group)]) else {
                throw StorageError.unknownGroup(group)
            }
            let logFrom: Int64 = hs[3]
            let memory = MemoryStorage()
            if let row = try Row.fetchOne(db, sql: "SELECT idx, term, conf_state, data FROM raft_snapshot WHERE group_id = ?",
                                          arguments: [Int64(bitPattern: group)]) {
                let meta = SnapshotMetadata(index: LogIndex(bitPattern: row[0]), term: Term(bitPattern: row[1]),
                                            confState: try Self.membership([UInt8](row[2] as Data), group: group))
                try memory.applySnapshot(Snapshot(metadata: meta, data: [UInt8](row[3] as Data)))
            }
            let after = try memory.lastIndex()
            var entries: [Entry] = []
            var rows: [(seq: Int64, first: LogIndex, last: LogIndex)] = []
            freedRows.withLock { $0 += stored.lazy.filter { $0.seq < logFrom }.map(\.seq) }
            for row in stored where row.seq >= logFrom {
                let decoded = try row.unreadable.map { try LogRow.decode($0, group: group) } ?? row.entries
                guard let first = decoded.first?.index, let last = decoded.last?.index else { continue }
                if let held = entries.first?.index, first >= held, first <= entries.last!.index + 1 {
                    entries.removeSubrange(Int(first - held)...)
                } else {
                    entries = []  // the row starts before what is held, or after a hole: only what follows counts
                }
                entries += decoded
                if last > after { rows.append((row.seq, first, last)) }
            }
            entries.removeAll { $0.index <= after }
            if let first = entries.first?.index, first != after + 1 {
                throw StorageError.corrupt("group \(group): log jumps from \(after) to \(first)")
            }
            try memory.append(entries)
            memory.setHardState(HardState(term: Term(bitPattern: hs[0]), vote: NodeID(bitPattern: hs[1]),
                                          commit: LogIndex(bitPattern: hs[2])))
            // Committed entries came without their data (`logRows`): they are read back from their rows.
            memory.evict(through: LogIndex(bitPattern: hs[2]))
            return DurableGroupLog(group: group, memory: memory, sequence: sequence, rows: rows, logFrom: logFrom,
                                   rewriteAfterRows: rewriteAfterRows, readRows: { try self.logRowBytes($0) })
        }
    }

    private static func membership(_ bytes: [UInt8], group: GroupID) throws -> ConfState {
        do { return try ConfState(decoding: bytes) } catch {
            throw StorageError.corrupt("group \(group): unreadable membership (\(error))")
        }
    }

    /// Removes a group and all it holds (its replica moved away): its state and snapshot at once, its log
    /// rows (`rows`, those its log holds) with the freed rows, a few at a time after later cycles. `raft_log`
    /// has no index on the group, and deleting by group scanned the whole table on the ready loop for every
    /// replica moved off the node. Any row of the group not listed goes with the deletion by prefix, which
    /// no longer waits for the dropped group's `log_from`.
    public func dropGroup(_ group: GroupID, rows: [Int64]) throws {
        try queue.write { db in
            for table in ["raft_snapshot", "raft_group"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE group_id = ?", arguments: [Int64(bitPattern: group)])
            }
        }
        unopenedRows.withLock { _ = $0?.removeValue(forKey: group) }
        freedRows.withLock { $0 += rows }
        unneededRows.withLock { $0 = true }
    }

    // MARK: Group commit

    /// Writes the whole batch in one transaction; a crash before it returns leaves none of it half-applied.
    /// When the batch `needsSync`, it is on disk when this returns (one fsync of the WAL). Otherwise (only
    /// commit indexes and history rows) the transaction is not synced by itself: the next synced one makes
    /// it durable too, since the WAL is written in order; until then a crash may lose it, which Raft and
    /// the history replay repair.
    public func commit(_ batch: StorageBatch) throws {
        guard !batch.isEmpty else { return }
        // History rows go to their own database on its thread; before a snapshot that covers them is
        // committed here, they (and all handed over before) must be on disk there.
        history.insertLater(batch.history, imLogs: batch.imLogs)
        if batch.writes.contains(where: { $0.write.snapshot != nil }) { try history.waitForWrites() }
        try history.throwIfWriteFailed()
        guard batch.deleteUnneededLogRows > 0 || batch.writes.contains(where: { !$0.write.isEmpty }) else { return }
        var logWrites = batch
        logWrites.history = []
        logWrites.imLogs = []
        try groupCommit.commit(logWrites) { try writeTransaction($0) }
    }

    /// `commit`'s transaction: the log, hard states and snapshots of one Raft loop's batch, or of several
    /// loops' batches joined (`GroupCommit`), and the freed rows it may delete.
    private func writeTransaction(_ batch: StorageBatch) throws {
        unopenedRows.withLock { $0 = nil }
        let start = ContinuousClock.now
        defer { commitTime.record(duration: ContinuousClock.now - start) }
        transactions.withLock { $0 += 1 }
        let relaxed = durable && !batch.needsSync
        // From the end: which freed rows go first does not matter, and the list can be long.
        let freed: [Int64] = batch.deleteUnneededLogRows == 0 ? [] : freedRows.withLock { rows in
            let taken = Array(rows.suffix(batch.deleteUnneededLogRows))
            rows.removeLast(taken.count)
            return taken
        }
        let deletedAll: Bool?
        do {
            deletedAll = try queue.writeWithoutTransaction { db in
                guard relaxed else { return try Self.write(batch, freed: freed, in: db) }
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                let written = Result { try Self.write(batch, freed: freed, in: db) }
                // FULL again before anything else commits, whatever became of this batch.
                try db.execute(sql: "PRAGMA synchronous = FULL")
                return try written.get()
            }
        } catch {
            freedRows.withLock { $0 += freed }
            throw error
        }
        let newlyFreed = batch.writes.flatMap(\.write.deadRows)
        if !newlyFreed.isEmpty { freedRows.withLock { $0 += newlyFreed } }
        if batch.writes.contains(where: { $0.write.logFrom != nil }) {
            unneededRows.withLock { $0 = true }
        } else if deletedAll == true {
            unneededRows.withLock { $0 = false }
        }
    }

    /// The batch in one transaction, with the `freed` rows deleted. Returns whether it deleted every row
    /// below every group's `log_from` (nil: it did not look, the freed rows took the batch's allowance).
    private static func write(_ batch: StorageBatch, freed: [Int64], in db: Database) throws -> Bool? {
        var deletedAll: Bool?
        try db.inTransaction {
            for (group, write) in batch.writes where !write.isEmpty {
                try apply(write, to: group, in: db)
            }
            for seq in freed {
                var delete = try PreparedInsert(db, sql: "DELETE FROM raft_log WHERE seq = ?")
                delete.bind(seq)
                try delete.run()
            }
            if batch.deleteUnneededLogRows > freed.count {
                // The oldest rows no group needs, a bounded number per commit (deleting a great many in one
                // transaction stalled the node for seconds); the newest row always stays, so seq never
                // starts again at 1.
                try db.execute(sql: """
                    DELETE FROM raft_log WHERE seq < min((SELECT min(log_from) FROM raft_group),
                        (SELECT max(seq) FROM raft_log), (SELECT min(seq) FROM raft_log) + ?)
                    """, arguments: [batch.deleteUnneededLogRows - freed.count])
                deletedAll = try Bool.fetchOne(db, sql: """
                    SELECT NOT EXISTS (SELECT 1 FROM raft_log WHERE seq < (SELECT min(log_from) FROM raft_group)
                        AND seq < (SELECT max(seq) FROM raft_log))
                    """) ?? false
            }
            return .commit
        }
        return deletedAll
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
        }
        if let first = write.entries.first, let last = write.entries.last {
            guard let seq = write.rowSeq else { preconditionFailure("group \(group): entries staged without a log row") }
            var insert = try PreparedInsert(db, sql: "INSERT INTO raft_log (seq, group_id, first_idx, last_idx, entries) VALUES (?, ?, ?, ?, ?)")
            insert.bind(seq)
            insert.bind(g)
            insert.bind(Int64(bitPattern: first.index))
            insert.bind(Int64(bitPattern: last.index))
            insert.bind(bytes: LogRow.encode(write.entries))
            try insert.run()
        }
        if let hs = write.hardState {
            var upsert = try PreparedInsert(db, sql: """
                INSERT INTO raft_group (group_id, term, vote, commit_index) VALUES (?, ?, ?, ?)
                ON CONFLICT(group_id) DO UPDATE SET term = excluded.term, vote = excluded.vote,
                    commit_index = excluded.commit_index
                """)
            upsert.bind(g)
            upsert.bind(Int64(bitPattern: hs.term))
            upsert.bind(Int64(bitPattern: hs.vote))
            upsert.bind(Int64(bitPattern: hs.commit))
            try upsert.run()
        }
        if let from = write.logFrom {
            try db.cachedStatement(sql: "UPDATE raft_group SET log_from = ? WHERE group_id = ?").execute(arguments: [from, g])
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
    /// Removes one entry from its log row behind the storage's back, so tests can prove corruption is detected.
    func deleteEntryForTesting(group: GroupID, index: LogIndex) throws {
        try queue.write { db in
            let i = Int64(bitPattern: index)
            guard let row = try Row.fetchOne(db, sql: """
                SELECT seq, entries FROM raft_log WHERE group_id = ? AND first_idx <= ? AND last_idx >= ? ORDER BY seq DESC
                """, arguments: [Int64(bitPattern: group), i, i]) else { return }
            let kept = try LogRow.decode([UInt8](row[1] as Data), group: group).filter { $0.index != index }
            try db.execute(sql: "UPDATE raft_log SET entries = ? WHERE seq = ?", arguments: [Data(LogRow.encode(kept)), row[0] as Int64])
        }
    }

    /// Whether the log table may hold rows no group needs (`StorageBatch.deleteUnneededLogRows`).
    public var mayHoldUnneededLogRows: Bool { unneededRows.withLock { $0 } || freedRows.withLock { !$0.isEmpty } }

    /// Rows in the shared log table (unneeded ones are deleted as groups take snapshots or rewrite).
    public func logRowCount() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM raft_log") ?? 0 }
    }
}
