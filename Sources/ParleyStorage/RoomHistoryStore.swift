import Foundation
import GRDB
import Synchronization
import ParleyRooms
import ParleyWire

/// N5: the durable room history of the shards a node holds. The room state keeps a bounded in-memory window
/// (the newest items); this table keeps everything within the retention window, a room's items in chunks
/// (`HistoryChunk`).
///
/// It lives in a database file of its own, written on that database's own thread (`insertLater`): history
/// rows are most of a busy node's writes, and writing them on the Raft loop made most of the latency tail.
/// A crash before rows are written loses nothing: the entries after the last snapshot are applied again on
/// restart and write the same rows; the host waits for the rows (`waitForWrites`) before a snapshot that
/// covers them is committed. Every read and every other write queues behind the rows already handed over.
public final class RoomHistoryStore: Sendable {
    let queue: DatabaseQueue
    /// The first failure of a write made in the background; reported by the next `waitForWrites`.
    private let failure = Mutex<(any Error)?>(nil)
    /// Each room's highest stored seq (nil: none) as writes left or looked it up since the last delete: spares
    /// a flush its index seek per room, a third of the writer's time at 1,000 clients. Only writes use it, and
    /// they run one at a time on the database's queue.
    private let lastSeqs = Mutex<[String: UInt64?]>([:])
    /// The same for the IM logs' chunks (`ImLogChunks`), by owner.
    private let lastImSeqs = Mutex<[String: UInt64?]>([:])

    /// Opens (creating if needed) the history database at `path`, synced at each commit when `durable`.
    init(path: String, durable: Bool, cacheBytes: Int = NodeDatabase.defaultCacheBytes, maxQueuedBytes: Int = 16 << 20) throws {
        self.maxQueuedBytes = maxQueuedBytes
        var config = Configuration()
        config.journalMode = .wal
        config.label = "parley-history"
        queue = try DatabaseQueue(path: path, configuration: config)
        try queue.writeWithoutTransaction { db in
            // As for the node's database: GRDB's WAL set-up leaves NORMAL, which does not sync at commit.
            try db.execute(sql: durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(NodeDatabase.checkpointPages)")
            try db.execute(sql: "PRAGMA cache_size = -\(max(64, cacheBytes >> 10))")
        }
        var m = DatabaseMigrator()
        Self.migrate(&m)
        try m.migrate(queue)
    }

    /// Writes rows on the history database's thread and returns at once — unless the rows handed over and not
    /// yet written already come to `maxQueuedBytes` (SPEC D1: they are memory): then it first waits for the
    /// writer. A replica replaying its log after a restart applies far faster than the store writes; without
    /// the wait its rows piled up in memory (a node restarted after 100,000 messages held 360 MB).
    func insertLater(_ rows: [Row], imLogs: [ImLogRow] = []) {
        guard !rows.isEmpty || !imLogs.isEmpty else { return }
        let bytes = rows.reduce(0) { $0 + $1.item.estimatedBytes } + imLogs.reduce(0) { $0 + $1.estimatedBytes }
        if queuedBytes.withLock({ $0 }) + bytes > maxQueuedBytes {
            queue.writeWithoutTransaction { _ in }  // behind every write handed over before
        }
        queuedBytes.withLock { $0 += bytes }
        writesInFlight.withLock { $0 += 1 }
        queue.asyncWrite({ db in
            try self.insert(rows, in: db)
            try self.lastImSeqs.withLock { try ImLogChunks.insert(imLogs, in: db, lastSeqs: &$0) }
        }) { _, result in
            if case .failure(let error) = result { self.failure.withLock { $0 = $0 ?? error } }
            self.queuedBytes.withLock { $0 -= bytes }
            self.writesInFlight.withLock { $0 -= 1 }
        }
    }

    /// The estimated bytes of the rows handed over and not yet written, and their bound.
    private let queuedBytes = Mutex(0)
    let maxQueuedBytes: Int
    var queuedRowBytes: Int { queuedBytes.withLock { $0 } }

    private let writesInFlight = Mutex(0)
    /// Whether rows handed over are still being written: a snapshot taken now would wait for them
    /// (`waitForWrites`), stopping the Raft loop meanwhile.
    public var isWriting: Bool { writesInFlight.withLock { $0 > 0 } }

    /// Throws the failure of a background write, if one failed.
    func throwIfWriteFailed() throws {
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Returns once every row handed over before it is written (and synced, on a durable database); throws
    /// if a background write failed.
    public func waitForWrites() throws {
        queue.writeWithoutTransaction { _ in }  // queued behind every write handed over before
        try throwIfWriteFailed()
    }

    /// One stored row: the item and what it is filtered and ordered by.
    public struct Row: Sendable, Hashable {
        public var shard: Int
        public var roomId: String
        public var item: HistoryItem

        public init(shard: Int, roomId: String, item: HistoryItem) {
            self.shard = shard
            self.roomId = roomId
            self.item = item
        }
    }

    static func migrate(_ m: inout DatabaseMigrator) {
        m.registerMigration("v1-room-history") { db in try db.execute(sql: rowPerItemTable) }
        m.registerMigration("v2-history-chunks") { db in
            try db.execute(sql: chunkTable)
            // The rows of v1 become chunks, a few thousand rows at a time.
            let rows = try GRDB.Row.fetchCursor(db, sql: "SELECT room_id, shard, item FROM room_history ORDER BY room_id, seq")
            var pending: [Row] = []
            var lastSeqs: [String: UInt64?] = [:]
            while let row = try rows.next() {
                pending.append(Row(shard: row[1], roomId: row[0], item: try HistoryItem(decoding: [UInt8](row[2] as Data))))
                if pending.count == 4_096 {
                    try insert(pending, in: db, lastSeqs: &lastSeqs)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            try insert(pending, in: db, lastSeqs: &lastSeqs)
            try db.execute(sql: "DROP TABLE room_history")
        }
        m.registerMigration("v3-im-log-chunks") { db in try db.execute(sql: ImLogChunks.table) }
    }

    /// The history table of v1, a row per item (also the node database's before its migration v4).
    static let rowPerItemTable = """
        CREATE TABLE room_history (
            room_id TEXT NOT NULL, seq INTEGER NOT NULL, shard INTEGER NOT NULL,
            time INTEGER NOT NULL, type INTEGER NOT NULL, item BLOB NOT NULL,
            PRIMARY KEY (room_id, seq)) WITHOUT ROWID;
        CREATE INDEX room_history_time ON room_history (time);
        """

    /// A row per `HistoryChunk`. `min_time` is indexed for expiry: every chunk holding an expired item.
    static let chunkTable = """
        CREATE TABLE room_history_chunk (
            room_id TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, shard INTEGER NOT NULL,
            min_time INTEGER NOT NULL, max_time INTEGER NOT NULL, item_count INTEGER NOT NULL, items BLOB NOT NULL,
            PRIMARY KEY (room_id, first_seq)) WITHOUT ROWID;
        CREATE INDEX room_history_chunk_time ON room_history_chunk (min_time);
        """

    /// Writes rows at once, on the caller's thread (an older node database's rows, when migrating).
    func insertNow(_ rows: [Row]) throws {
        try queue.write { db in try insert(rows, in: db) }
    }

    private func insert(_ rows: [Row], in db: Database) throws {
        try lastSeqs.withLock { lastSeqs in try Self.insert(rows, in: db, lastSeqs: &lastSeqs) }
    }

    private static func insert(_ rows: [Row], in db: Database, lastSeqs: inout [String: UInt64?]) throws {
        guard !rows.isEmpty else { return }
        let chunks = try HistoryChunk.chunks(of: rows) { room in
            if let known = lastSeqs[room] { return known }
            let stored = try Int64.fetchOne(db.cachedStatement(sql: """
                SELECT last_seq FROM room_history_chunk WHERE room_id = ? ORDER BY first_seq DESC LIMIT 1
                """), arguments: [room]).map { UInt64(bitPattern: $0) }
            lastSeqs[room] = .some(stored)
            return stored
        }
        try insert(chunks, in: db)
        for chunk in chunks { lastSeqs[chunk.roomId] = .some(chunk.lastSeq) }
    }

    private static func insert(_ chunks: [HistoryChunk], in db: Database) throws {
        var insert = try PreparedInsert(db, sql: """
            INSERT OR REPLACE INTO room_history_chunk (room_id, first_seq, last_seq, shard, min_time, max_time,
                                                       item_count, items) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for chunk in chunks {
            insert.bind(chunk.roomId)
            insert.bind(Int64(bitPattern: chunk.firstSeq))
            insert.bind(Int64(bitPattern: chunk.lastSeq))
            insert.bind(Int64(chunk.shard))
            insert.bind(chunk.minTime)
            insert.bind(chunk.maxTime)
            insert.bind(Int64(chunk.items.count))
            insert.bind(bytes: chunk.encodedItems())
            try insert.run()
        }
    }

    // The reads of `HistoryReader`, on the caller's thread.
    public func page(roomId: String, after: Int64, before: Int64, belowSeq: UInt64, types: [MessageType],
                     ascending: Bool, limit: Int) throws -> [HistoryItem] {
        try readNow { try $0.page(roomId: roomId, after: after, before: before, belowSeq: belowSeq, types: types,
                                  ascending: ascending, limit: limit) }
    }

    public func since(roomId: String, afterSeq: UInt64, belowSeq: UInt64, notBefore: Int64, limit: Int) throws -> [HistoryItem] {
        try readNow { try $0.since(roomId: roomId, afterSeq: afterSeq, belowSeq: belowSeq, notBefore: notBefore, limit: limit) }
    }

    public func oldestSeq(roomId: String, notBefore: Int64) throws -> UInt64? {
        try readNow { try $0.oldestSeq(roomId: roomId, notBefore: notBefore) }
    }

    /// Runs `body` on the history database's thread, after every write handed over before it (so it sees
    /// every row `insertLater` took so far), and gives its result to `then` on that thread: a read the Raft
    /// loop starts without waiting for it (issue 34).
    public func readLater<T: Sendable>(_ body: @escaping @Sendable (HistoryReader) throws -> T,
                                       then: @escaping @Sendable (Result<T, any Error>) -> Void) {
        queue.asyncRead { database in then(Result { try body(HistoryReader(db: try database.get())) }) }
    }

    /// Runs `body` on the caller's thread, after every write handed over before it.
    public func readNow<T>(_ body: (HistoryReader) throws -> T) throws -> T {
        try queue.read { db in try body(HistoryReader(db: db)) }
    }

    /// Deletes what the retention window no longer allows; returns how many items went. A chunk with only
    /// some items expired is written again with the rest.
    @discardableResult
    public func deleteOlderThan(_ time: Int64) throws -> Int {
        try queue.write { db in
            var gone = try Int.fetchOne(db, sql: """
                SELECT COALESCE(SUM(item_count), 0) FROM room_history_chunk WHERE min_time < ? AND max_time < ?
                """, arguments: [time, time]) ?? 0
            try db.execute(sql: "DELETE FROM room_history_chunk WHERE min_time < ? AND max_time < ?", arguments: [time, time])
            let partial = try GRDB.Row.fetchAll(db, sql: """
                SELECT room_id, first_seq, shard, items FROM room_history_chunk WHERE min_time < ?
                """, arguments: [time])
            var rest: [HistoryChunk] = []
            for row in partial {
                let items = try HistoryChunk.decodeItems([UInt8](row[3] as Data))
                let kept = items.filter { $0.time >= time }
                gone += items.count - kept.count
                try db.execute(sql: "DELETE FROM room_history_chunk WHERE room_id = ? AND first_seq = ?",
                               arguments: [row[0] as String, row[1] as Int64])
                if !kept.isEmpty { rest.append(HistoryChunk(roomId: row[0], shard: row[2], items: kept)) }
            }
            try Self.insert(rest, in: db)
            lastSeqs.withLock { $0.removeAll() }  // a rewritten chunk may end lower, a room may have none left
            return gone
        }
    }

    /// Deletes the IM logs' items older than `time` (their retention); returns how many went.
    @discardableResult
    public func deleteImLogsOlderThan(_ time: Int64) throws -> Int {
        try queue.write { db in
            defer { lastImSeqs.withLock { $0.removeAll() } }
            return try ImLogChunks.deleteOlderThan(time, in: db)
        }
    }

    /// Drops a shard's items, rooms' and IM logs' (its replica left this node).
    public func dropShard(_ shard: Int) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM room_history_chunk WHERE shard = ?", arguments: [shard])
            try db.execute(sql: "DELETE FROM im_log_chunk WHERE shard = ?", arguments: [shard])
            lastSeqs.withLock { $0.removeAll() }
            lastImSeqs.withLock { $0.removeAll() }
        }
    }

    /// How many IM log items the store holds.
    public func imLogCount() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(item_count), 0) FROM im_log_chunk") ?? 0 }
    }

    /// How many items the store holds.
    public func count() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(item_count), 0) FROM room_history_chunk") ?? 0 }
    }
}
