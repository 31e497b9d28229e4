import ParleyRaft

/// E6: which edges should serve a room. Rendezvous hashing of the room over the live edges puts one room's
/// members on the same first edge (fan-out stays local), and removing an edge moves only its rooms.
public enum EdgeDirectory {
    /// The live edges for `roomId`, best first, as `host:port` client addresses. Draining and removed nodes,
    /// and nodes not in `reachable`, are left out.
    public static func addresses(forRoom roomId: String, nodes: [NodeRecord], reachable: Set<NodeID>) -> [String] {
        let live = nodes.filter { $0.state == .active && reachable.contains($0.id) }
        let byID = Dictionary(uniqueKeysWithValues: live.map { ($0.id, $0) })
        return StableHash.rendezvousOrder(item: StableHash.of(roomId), candidates: live.map(\.id).sorted())
            .map { byID[$0]!.httpAddress }
    }
}
