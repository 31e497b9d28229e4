/// The rooms of a shard, kept in an array with an id index so a command mutates its room in
/// place: `dict[id]!.mutate()` goes through the dictionary's optional accessor, which copies the
/// `Room` out and back on every apply (measured: the largest cost of a send).
struct RoomTable: Sendable {
    private(set) var slots: [Room] = []
    private var index: [String: Int] = [:]

    var count: Int { slots.count }

    /// Every room id, sorted (for deterministic walks).
    var ids: [String] { index.keys.sorted() }

    func slot(of roomId: String) -> Int? { index[roomId] }

    /// A copy of a room, for reads outside the hot path (tests, inspection).
    subscript(roomId: String) -> Room? { index[roomId].map { slots[$0] } }

    /// The room in a slot, mutated in place.
    subscript(slot i: Int) -> Room {
        _read { yield slots[i] }
        _modify { yield &slots[i] }
    }

    /// Adds a room whose id is not in the table yet; rooms are closed, never removed.
    mutating func insert(_ room: Room) {
        index[room.info.roomId] = slots.count
        slots.append(room)
    }
}
