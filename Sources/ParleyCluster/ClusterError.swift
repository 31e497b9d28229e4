import ParleyRaft

/// Why the cluster layer could not do what was asked.
public enum ClusterError: Error, Equatable, Sendable {
    /// This node does not hold a replica of the shard.
    case shardNotHere(ShardID)
    /// This replica is not the group's leader; `leader` is the one it knows of (0 = none known).
    case notLeader(leader: NodeID)
    /// This node holds no replica of the meta group.
    case metaNotHere
    /// Raft refused the proposal (over the uncommitted cap, a transfer in progress …).
    case proposalRefused(String)
    /// Leadership moved while the proposal was in flight: it may or may not have been applied.
    case outcomeUnknown
    /// A snapshot could not be decoded.
    case snapshotUnreadable(String)
}
