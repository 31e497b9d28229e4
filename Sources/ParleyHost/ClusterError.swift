import ParleyRaft
import ParleyPlacement

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
    /// A committed entry this node's version cannot read (a command of a newer version, or damage): the node
    /// stops applying rather than skip it and diverge from the other replicas (issue 18, upgrades).
    case entryUnreadable(group: UInt64, index: LogIndex, reason: String)
}

extension ClusterError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .shardNotHere(let s): return "no replica of shard \(s) here"
        case .notLeader(let l): return "not the leader (leader \(l))"
        case .metaNotHere: return "no meta replica here"
        case .proposalRefused(let why): return "proposal refused: \(why)"
        case .outcomeUnknown: return "outcome unknown"
        case .snapshotUnreadable(let why): return "snapshot unreadable: \(why)"
        case .entryUnreadable(let group, let index, let reason):
            return "group \(group) entry \(index) cannot be read by this node (\(reason)): it stops applying rather than "
                + "skip the entry; run a version that reads it (docs/operations.md, Upgrades)"
        }
    }
}
