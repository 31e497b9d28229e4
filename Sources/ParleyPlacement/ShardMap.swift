import ParleyRaft

/// A shard: one Raft group holding a fixed slice of the rooms.
public typealias ShardID = Int

/// Which shard holds a room, and which nodes hold a shard's replicas.
///
/// The shard count is fixed when the cluster is created, so a room never moves between shards; replicas
/// are placed by rendezvous hashing over the nodes, so adding or removing a node moves only the replicas
/// it must.
public struct ShardMap: Sendable, Hashable {
    public let shardCount: Int
    public let replicationFactor: Int

    public init(shardCount: Int = 64, replicationFactor: Int = 3) {
        precondition(shardCount > 0 && replicationFactor > 0)
        self.shardCount = shardCount
        self.replicationFactor = replicationFactor
    }

    /// `shard = jumpConsistentHash(stableHash(roomId), shardCount)`.
    public func shard(ofRoom roomID: String) -> ShardID {
        StableHash.jumpConsistentHash(StableHash.of(roomID), buckets: shardCount)
    }

    /// Issue 19: the shard of a user's IM state (an app-scoped account), in a name space of its own so a
    /// user, a team and a room of the same name never collide (docs/im.md).
    public func shard(ofUser account: String) -> ShardID { shard(ofRoom: "u:" + account) }

    /// The shard of a team (an app-scoped team id).
    public func shard(ofTeam teamId: String) -> ShardID { shard(ofRoom: "t:" + teamId) }

    /// The nodes that hold `shard`'s replicas, best first (at most `replicationFactor`).
    public func replicas(of shard: ShardID, nodes: [NodeID]) -> [NodeID] {
        Array(StableHash.rendezvousOrder(item: StableHash.mix(UInt64(shard) &+ 1), candidates: nodes)
            .prefix(replicationFactor))
    }

    /// `nodes` in `shard`'s rendezvous order, all of them (a group's voters, best first).
    public func ranked(_ shard: ShardID, _ nodes: [NodeID]) -> [NodeID] {
        StableHash.rendezvousOrder(item: StableHash.mix(UInt64(shard) &+ 1), candidates: nodes)
    }

    /// The nodes that hold the meta group (node registry, placement table, app credentials).
    public func metaReplicas(nodes: [NodeID]) -> [NodeID] {
        Array(StableHash.rendezvousOrder(item: StableHash.of("parley-meta-group"), candidates: nodes).prefix(replicationFactor))
    }

    /// The meta group's id.
    public static let metaGroup: UInt64 = 0

    /// The Raft group that runs `shard` (group 0 is the meta group).
    public func group(of shard: ShardID) -> UInt64 { UInt64(shard) + 1 }

    /// The shard a Raft group runs, or nil for the meta group and unknown groups.
    public func shard(ofGroup group: UInt64) -> ShardID? {
        group >= 1 && group <= UInt64(shardCount) ? ShardID(group - 1) : nil
    }
}
