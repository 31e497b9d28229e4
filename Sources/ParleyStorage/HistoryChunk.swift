import ParleyRooms
import ParleyWire

/// A run of one room's history items, stored as one row of the history table: the items of a room that one
/// flush writes, oldest first. A row per item made the history writer a quarter of a busy node's CPU (two
/// B-tree inserts and a transaction's share per message, on every replica); a flush carries many items of each
/// busy room, and a chunk pays for them once.
///
/// The chunks of a room never overlap, so their order by first seq is the items' order: a flush writes only
/// the items above the room's highest stored seq (`chunks(of:storedThrough:)`), and replayed items below it
/// are already stored (rows are written in apply order, on one thread) or expired.
struct HistoryChunk: Sendable, Hashable {
    /// The most items one chunk holds; a read decodes whole chunks, so this bounds a short read's work.
    static let maxItems = 256

    var roomId: String
    var shard: Int
    /// Ascending by seq, no two with the same seq; never empty.
    var items: [HistoryItem]

    var firstSeq: UInt64 { items[0].seq }
    var lastSeq: UInt64 { items[items.count - 1].seq }
    /// Item times need not grow with seq (a new leader's clock may be behind), hence the bounds of both.
    var minTime: Int64 { items.lazy.map(\.time).min()! }
    var maxTime: Int64 { items.lazy.map(\.time).max()! }

    func encodedItems() -> [UInt8] {
        var w = ByteWriter(capacity: 256 * items.count)
        w.write(items)
        return w.bytes
    }

    static func decodeItems(_ bytes: [UInt8]) throws -> [HistoryItem] {
        var r = ByteReader(bytes)
        let items = try r.readArray(HistoryItem.self)
        guard r.isAtEnd else { throw CodecError.trailingBytes(r.remaining) }
        return items
    }

    /// The chunks that store `rows` (in apply order, any rooms) on top of what is stored: per room, its items
    /// sorted by seq, each seq once, only those above `storedThrough(room)`, at most `maxItems` a chunk.
    static func chunks(of rows: [RoomHistoryStore.Row], storedThrough: (String) throws -> UInt64?) rethrows -> [HistoryChunk] {
        var rooms: [String] = []
        var byRoom: [String: (shard: Int, items: [HistoryItem])] = [:]
        for row in rows {
            if byRoom[row.roomId] == nil {
                rooms.append(row.roomId)
                byRoom[row.roomId] = (row.shard, [])
            }
            byRoom[row.roomId]!.items.append(row.item)
        }
        var out: [HistoryChunk] = []
        for room in rooms {
            let (shard, items) = byRoom[room]!
            let floor = try storedThrough(room)
            var fresh: [HistoryItem] = []
            fresh.reserveCapacity(items.count)
            // Rows come in apply order, so a room's are nearly always ascending already. Otherwise a stable
            // sort: of two items with the same seq (the same item written twice) the later one stays.
            let ascending = zip(items, items.dropFirst()).allSatisfy { $0.seq < $1.seq }
            let ordered = ascending ? items
                : items.enumerated().sorted(by: { ($0.element.seq, $0.offset) < ($1.element.seq, $1.offset) }).map(\.element)
            for item in ordered {
                if let floor, item.seq <= floor { continue }
                if let last = fresh.last, last.seq == item.seq { fresh[fresh.count - 1] = item } else { fresh.append(item) }
            }
            var start = 0
            while start < fresh.count {
                let end = min(start + maxItems, fresh.count)
                out.append(HistoryChunk(roomId: room, shard: shard, items: Array(fresh[start..<end])))
                start = end
            }
        }
        return out
    }
}
