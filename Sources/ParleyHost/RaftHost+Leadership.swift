import ParleyRaft
import ParleyPlacement

/// Issue 17's leader balance as the host serves it: the shards it leads and who could take them over, and
/// the hand-over itself.
extension RaftHost {
    /// The shards this node leads, each with the voters that could take over now (caught up to the commit
    /// index), which is what `LeaderBalance` may move leadership to.
    public func ledShards() -> [LeaderBalance.Shard] {
        shardOrder.compactMap { shard in
            guard let r = replicas[shard], r.isLeader else { return nil }
            let s = r.raft.status
            return LeaderBalance.Shard(shard: shard, leader: config.nodeID, replicas: Self.caughtUpVoters(s),
                                       members: s.confState.allMembers)
        }
    }

    /// The voters a leader's group may hand over to: those that hold everything committed (the leader too).
    private static func caughtUpVoters(_ s: RaftStatus) -> [NodeID] {
        s.confState.voters.filter { v in
            v == s.id || (s.progress[v].map { $0.match >= s.hardState.commit && !$0.isLearner } ?? false)
        }
    }

    package func countBalanceTransferAsked() { metrics.balanceTransfersAsked.increment() }

    /// Starts handing `shard`'s leadership to `node` (Raft catches it up first, then tells it to campaign).
    /// False when this replica does not lead the shard or `node` is not one of its voters.
    public func transferLeadership(shard: ShardID, to node: NodeID) -> Bool {
        guard let r = replicas[shard] else { return false }
        return take(.transferLeadership(to: node), on: r)
    }

    /// The meta group's voters that are caught up with its leader here (empty unless this node leads it).
    public func caughtUpMetaVoters() -> [NodeID] {
        guard let meta, meta.isLeader else { return [] }
        return Self.caughtUpVoters(meta.raft.status)
    }

    /// Starts handing the meta group's leadership to `node`; false when this node does not lead it.
    public func transferMetaLeadership(to node: NodeID) -> Bool {
        guard let meta else { return false }
        return take(.transferLeadership(to: node), on: meta)
    }
}
