import ParleyPlacement

/// Which of a node's groups one `RaftHost` holds when the node runs its groups on several event loops
/// (issue 35, docs/cores.md): shard `s` on loop `s % count`, the meta group on loop 0. Fixed for the
/// process's life, so a group's state never changes thread.
public struct HostPartition: Sendable, Hashable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    /// Every group on one host (a node with one Raft loop, and the simulator).
    public static let whole = HostPartition(index: 0, count: 1)

    public init(index: Int, count: Int) {
        precondition(count >= 1 && (0..<count).contains(index), "partition \(index) of \(count)")
        self.index = index
        self.count = count
    }

    /// The partition that holds `shard`.
    public static func index(ofShard shard: ShardID, count: Int) -> Int { shard % count }

    /// The partition that holds `group` (the meta group, and a group no shard has, on the first).
    public static func index(ofGroup group: UInt64, shardMap: ShardMap, count: Int) -> Int {
        shardMap.shard(ofGroup: group).map { index(ofShard: $0, count: count) } ?? 0
    }

    public func holds(shard: ShardID) -> Bool { Self.index(ofShard: shard, count: count) == index }
    public var holdsMeta: Bool { index == 0 }

    public func holds(group: UInt64, shardMap: ShardMap) -> Bool {
        Self.index(ofGroup: group, shardMap: shardMap, count: count) == index
    }

    public var description: String { "\(index + 1) of \(count)" }
}
