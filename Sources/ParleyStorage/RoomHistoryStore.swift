import Foundation
import GRDB
import ParleyRooms
import ParleyWire

/// N5: the durable room history of the shards a node holds, in the node's database. The room state keeps a
/// bounded in-memory window (the newest items); this table keeps everything within the retention window,
/// written with the group commit of the cycle after the entry applied (a crash before that loses nothing:
/// the entries are re-applied from the Raft log on restart and write the same rows again).
public struct RoomHistoryStore: Sendable {
    let queue: DatabaseQueue

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
        m.registerMigration("v2-room-history") { db in
            try db.execute(sql: """
                CREATE TABLE room_history (
                    room_id TEXT NOT NULL, seq INTEGER NOT NULL, shard INTEGER NOT NULL,
                    time INTEGER NOT NULL, type INTEGER NOT NULL, item BLOB NOT NULL,
                    PRIMARY KEY (room_id, seq)) WITHOUT ROWID;
                CREATE INDEX room_history_time ON room_history (time);
                """)
        }
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
