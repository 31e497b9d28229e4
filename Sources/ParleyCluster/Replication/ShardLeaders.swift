import NIOConcurrencyHelpers
import ParleyRaft
import ParleyPlacement

/// The leader each shard replica of this node last knew, readable from any thread: an edge loop sends a
/// command of a shard this node follows straight to its leader over a link of its own, without a hop to the
/// Raft loop and back (issue 35). A hint only: a stale one is answered notLeader and the command takes the
/// driver's route.
public final class ShardLeaders: Sendable {
    private let leaders: NIOLockedValueBox<[NodeID]>

    public init(shardCount: Int) {
        leaders = NIOLockedValueBox([NodeID](repeating: 0, count: shardCount))
    }

    /// 0: none known (or no replica here).
    public func leader(of shard: ShardID) -> NodeID {
        leaders.withLockedValue { shard >= 0 && shard < $0.count ? $0[shard] : 0 }
    }

    /// The leader a shard's feed page named when this node polled another (it holds no replica of the shard,
    /// or its replica knows no leader), or a replica named in refusing a command this node, holding none, sent
    /// it (`RaftDriver.attempt`): a node with no replica sends straight there too.
    public func learned(_ leader: NodeID, of shard: ShardID) {
        guard leader != 0 else { return }
        set(leader, of: shard)
    }

    /// The one rule for a call of `shard`'s command to `called` waiting on a silent link (`PeerTransport.call`'s
    /// `givesWay`), for every road: it gives way once this node knows another leader of the shard — a paused or
    /// cut-off leader's callers go to its successor within a second of the silence instead of waiting 4 s for
    /// the heartbeat to close the link (session 47).
    public func givesWay(from called: NodeID, of shard: ShardID) -> @Sendable () -> Bool {
        { let now = self.leader(of: shard); return now != 0 && now != called }
    }

    func set(_ leader: NodeID, of shard: ShardID) {
        leaders.withLockedValue { if shard >= 0 && shard < $0.count { $0[shard] = leader } }
    }
}
