import ParleyRooms

/// SPEC D2 / D3: the room messages a connection (a slow reader) or a room on this edge (above its ceiling) did
/// not get, by room and seq, until the clients are told with one `shed` event per room. Seqs come in rising
/// order per room, so runs merge into ranges; a room holds at most `maxRanges` of them — past that the last
/// range stretches over the new seq (it may then name seqs that were delivered: the client, which keeps every
/// message by seq, finds them in history again), so what it holds stays bounded whatever happens.
struct ShedSeqs {
    static let maxRanges = 64
    /// Rooms in the order their first shed seq came, each with its ranges.
    private var rooms: [(roomId: String, ranges: [ClosedRange<UInt64>])] = []

    var isEmpty: Bool { rooms.isEmpty }

    mutating func add(roomId: String, seq: UInt64) {
        guard let i = rooms.firstIndex(where: { $0.roomId == roomId }) else {
            rooms.append((roomId, [seq...seq]))
            return
        }
        let last = rooms[i].ranges[rooms[i].ranges.count - 1]
        if seq <= last.upperBound { return }
        if seq == last.upperBound + 1 || rooms[i].ranges.count >= Self.maxRanges {
            rooms[i].ranges[rooms[i].ranges.count - 1] = last.lowerBound...seq
        } else {
            rooms[i].ranges.append(seq...seq)
        }
    }

    /// The `shed` events for everything held (one per room, `reason` "rate" or "slow"), and nothing held after.
    mutating func takeFrames(reason: String) -> [TextFrame] {
        defer { rooms = [] }
        return rooms.map { TextFrame(EventFrame.shed(roomId: $0.roomId, reason: reason, ranges: $0.ranges)) }
    }
}

/// D2: what lets a connection that is behind skip an event (a low-priority message): its room (app-scoped) and
/// seq, so the client can be told.
struct Sheddable: Sendable {
    let roomId: String
    let seq: UInt64

    /// The low-priority message an event carries, if it is one.
    init?(_ event: RoomEvent) {
        guard case .message(let m) = event.kind, m.priority == .low, event.seq > 0 else { return nil }
        roomId = event.roomId
        seq = event.seq
    }
}
