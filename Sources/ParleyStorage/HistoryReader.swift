import Foundation
import GRDB
import ParleyRooms

/// The history store's queries, on a connection the store lends for one read (`RoomHistoryStore.readLater`,
/// `readNow`, or its own methods of the same names).
public struct HistoryReader {
    let db: Database

    /// The items of the chunks a query selects (by `items`), in the query's chunk order, each chunk's items
    /// in the same direction, that pass `keep`; at most `limit`.
    private func items(_ sql: String, _ arguments: StatementArguments, descending: Bool = false, limit: Int,
                       keep: (HistoryItem) -> Bool) throws -> [HistoryItem] {
        guard limit > 0 else { return [] }
        var out: [HistoryItem] = []
        let chunks = try Data.fetchCursor(db, sql: sql, arguments: arguments)
        while out.count < limit, let bytes = try chunks.next() {
            let items = try HistoryChunk.decodeItems([UInt8](bytes))
            for item in descending ? items.reversed() : items where keep(item) {
                out.append(item)
                if out.count == limit { break }
            }
        }
        return out
    }

    private static func seqBound(_ seq: UInt64) -> Int64 { Int64(bitPattern: min(seq, UInt64(Int64.max))) }

    /// Items of a room with `time` in `(after, before)` and seq below `belowSeq`, of the given types (empty =
    /// all), newest first when `ascending` is false; at most `limit`.
    public func page(roomId: String, after: Int64, before: Int64, belowSeq: UInt64, types: [MessageType],
                     ascending: Bool, limit: Int) throws -> [HistoryItem] {
        let sql = """
            SELECT items FROM room_history_chunk WHERE room_id = ? AND first_seq < ? AND max_time > ? AND min_time < ?
            ORDER BY first_seq \(ascending ? "ASC" : "DESC")
            """
        return try items(sql, [roomId, Self.seqBound(belowSeq), after, before], descending: !ascending, limit: limit) { item in
            item.time > after && item.time < before && item.seq < belowSeq && (types.isEmpty || types.contains(item.messageType))
        }
    }

    /// X2: items of a room with seq in `(afterSeq, belowSeq)`, oldest first, time after `notBefore`.
    public func since(roomId: String, afterSeq: UInt64, belowSeq: UInt64, notBefore: Int64, limit: Int) throws -> [HistoryItem] {
        let sql = """
            SELECT items FROM room_history_chunk WHERE room_id = ? AND last_seq > ? AND first_seq < ? AND max_time >= ?
            ORDER BY first_seq ASC
            """
        return try items(sql, [roomId, Self.seqBound(afterSeq), Self.seqBound(belowSeq), notBefore], limit: limit) { item in
            item.seq > afterSeq && item.seq < belowSeq && item.time >= notBefore
        }
    }

    /// The lowest seq the store holds for a room within retention (nil when none).
    public func oldestSeq(roomId: String, notBefore: Int64) throws -> UInt64? {
        // The first chunk with any item in retention holds the oldest such item.
        let sql = "SELECT items FROM room_history_chunk WHERE room_id = ? AND max_time >= ? ORDER BY first_seq ASC LIMIT 1"
        return try items(sql, [roomId, notBefore], limit: 1) { $0.time >= notBefore }.first?.seq
    }
}
