import ParleyRaft

extension ReplicaMoves {
    /// The placement table for a set of nodes: each shard's replicas are the top `replicationFactor` of its
    /// rendezvous order over them, so a node joining or leaving changes only the shards whose top set it
    /// enters or leaves.
    public static func table(shardMap: ShardMap, nodes: [NodeID]) -> [[NodeID]] {
        (0..<shardMap.shardCount).map { shardMap.replicas(of: $0, nodes: nodes) }
    }
}
