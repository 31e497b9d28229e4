import Foundation
import GRDB
import Synchronization
import ParleyRooms
import ParleyWire

/// N5: the durable room history of the shards a node holds. The room state keeps a bounded in-memory window
/// (the newest items); this table keeps everything within the retention window.
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

    /// Opens (creating if needed) the history database at `path`, synced at each commit when `durable`.
    init(path: String, durable: Bool) throws {
        var config = Configuration()
        config.journalMode = .wal
        config.label = "parley-history"
        queue = try DatabaseQueue(path: path, configuration: config)
        try queue.writeWithoutTransaction { db in
            // As for the node's database: GRDB's WAL set-up leaves NORMAL, which does not sync at commit.
            try db.execute(sql: durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(NodeDatabase.checkpointPages)")
            try db.execute(sql: "PRAGMA cache_size = -\(NodeDatabase.cacheKiB)")
        }
        var m = DatabaseMigrator()
        Self.migrate(&m)
        try m.migrate(queue)
    }

    /// Writes rows on the history database's thread and returns at once.
    func insertLater(_ rows: [Row]) {
        guard !rows.isEmpty else { return }
        queue.asyncWrite({ db in try Self.insert(rows, in: db) }) { _, result in
            if case .failure(let error) = result { self.failure.withLock { $0 = $0 ?? error } }
        }
    }

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
        m.registerMigration("v1-room-history") { db in try db.execute(sql: createTable) }
    }

    /// The history table, as it is in its own database and as it was in the node's before migration v4.
    static let createTable = """
        CREATE TABLE room_history (
            room_id TEXT NOT NULL, seq INTEGER NOT NULL, shard INTEGER NOT NULL,
            time INTEGER NOT NULL, type INTEGER NOT NULL, item BLOB NOT NULL,
            PRIMARY KEY (room_id, seq)) WITHOUT ROWID;
        CREATE INDEX room_history_time ON room_history (time);
        """

    /// Writes rows at once, on the caller's thread (an older node database's rows, when migrating).
    func insertNow(_ rows: [Row]) throws {
        try queue.write { db in try Self.insert(rows, in: db) }
    }

    static func insert(_ rows: [Row], in db: Database) throws {
        var insert = try PreparedInsert(db, sql: """
            INSERT OR REPLACE INTO room_history (room_id, seq, shard, time, type, item) VALUES (?, ?, ?, ?, ?, ?)
            """)
        for row in rows {
            insert.bind(row.roomId)
            insert.bind(Int64(bitPattern: row.item.seq))
            insert.bind(Int64(row.shard))
            insert.bind(row.item.time)
            insert.bind(Int64(row.item.messageType.rawValue))
            insert.bind(bytes: row.item.encoded())
            try insert.run()
        }
    }

    /// Items of a room with `time` in `(after, before)` and seq below `belowSeq`, of the given types (empty =
    /// all), newest first when `ascending` is false; at most `limit`.
    public func page(roomId: String, after: Int64, before: Int64, belowSeq: UInt64, types: [MessageType],
                     ascending: Bool, limit: Int) throws -> [HistoryItem] {
        guard limit > 0 else { return [] }
        var sql = "SELECT item FROM room_history WHERE room_id = ? AND time > ? AND time < ? AND seq < ?"
        var arguments: [any DatabaseValueConvertible] = [roomId, after, before, Int64(bitPattern: min(belowSeq, UInt64(Int64.max)))]
        if !types.isEmpty {
            sql += " AND type IN (\(types.map { _ in "?" }.joined(separator: ",")))"
            arguments += types.map { Int64($0.rawValue) }
        }
        sql += " ORDER BY seq \(ascending ? "ASC" : "DESC") LIMIT ?"
        arguments.append(limit)
        return try queue.read { db in
            try Data.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map { try HistoryItem(decoding: [UInt8]($0)) }
        }
    }

    /// X2: items of a room with seq in `(afterSeq, belowSeq)`, oldest first, time after `notBefore`.
    public func since(roomId: String, afterSeq: UInt64, belowSeq: UInt64, notBefore: Int64, limit: Int) throws -> [HistoryItem] {
        guard limit > 0 else { return [] }
        return try queue.read { db in
            try Data.fetchAll(db, sql: """
                SELECT item FROM room_history WHERE room_id = ? AND seq > ? AND seq < ? AND time >= ?
                ORDER BY seq ASC LIMIT ?
                """, arguments: [roomId, Int64(bitPattern: afterSeq), Int64(bitPattern: min(belowSeq, UInt64(Int64.max))),
                                 notBefore, limit]).map { try HistoryItem(decoding: [UInt8]($0)) }
        }
    }

    /// The lowest seq the store holds for a room within retention (nil when none).
    public func oldestSeq(roomId: String, notBefore: Int64) throws -> UInt64? {
        try queue.read { db in
            try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM room_history WHERE room_id = ? AND time >= ?",
                               arguments: [roomId, notBefore]).map { UInt64(bitPattern: $0) }
        }
    }

    /// Deletes what the retention window no longer allows; returns how many rows went.
    @discardableResult
    public func deleteOlderThan(_ time: Int64) throws -> Int {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM room_history WHERE time < ?", arguments: [time])
            return db.changesCount
        }
    }

    /// Drops a shard's rows (its replica left this node).
    public func dropShard(_ shard: Int) throws {
        try queue.write { db in try db.execute(sql: "DELETE FROM room_history WHERE shard = ?", arguments: [shard]) }
    }

    public func count() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM room_history") ?? 0 }
    }
}
