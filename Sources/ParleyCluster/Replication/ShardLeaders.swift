import NIOConcurrencyHelpers
import NIOCore
import ParleyRaft
import ParleyPlacement

/// The leader each shard replica of this node last knew, readable from any thread: an edge loop sends a
/// command of a shard this node follows straight to its leader over a link of its own, without a hop to the
/// Raft loop and back (issue 35). A hint only: a stale one is answered notLeader and the command takes the
/// driver's route.
public final class ShardLeaders: Sendable {
    private let leaders: NIOLockedValueBox<[NodeID]>
    /// Asks the shard's other replicas who leads it now, for a call waiting on a silent leader
    /// (`RaftDriver.askWhoLeads`; set once by `RaftLoops`).
    private let asker = NIOLockedValueBox<(@Sendable (_ silent: NodeID, _ shard: ShardID) -> Void)?>(nil)
    /// When each shard's replicas may be asked again: at most twice a second per shard, however many calls wait.
    private let askAgain: NIOLockedValueBox<[NIODeadline]>

    public init(shardCount: Int) {
        leaders = NIOLockedValueBox([NodeID](repeating: 0, count: shardCount))
        askAgain = NIOLockedValueBox([NIODeadline](repeating: .uptimeNanoseconds(0), count: shardCount))
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
    ///
    /// Until it knows one, each look asks who leads (`asker`, at most twice a second per shard): a node that holds
    /// no replica of the shard learns leaders only from refusals and feed pages, and neither comes from a paused
    /// leader, so its calls waited the 4 s out (session 48); the shard's other replicas know the successor from
    /// their election, and the answer is learned here like a refusal's.
    public func givesWay(from called: NodeID, of shard: ShardID) -> @Sendable () -> Bool {
        {
            let now = self.leader(of: shard)
            if now != 0 && now != called { return true }
            self.askWhoLeads(besides: called, of: shard)
            return false
        }
    }

    /// Sets who asks the shard's replicas for its leader (once, as the node's Raft loops start).
    func whenSilent(ask: @escaping @Sendable (_ silent: NodeID, _ shard: ShardID) -> Void) {
        asker.withLockedValue { $0 = ask }
    }

    private func askWhoLeads(besides silent: NodeID, of shard: ShardID) {
        let now = NIODeadline.now()
        let due = askAgain.withLockedValue { next -> Bool in
            guard shard >= 0 && shard < next.count, next[shard] <= now else { return false }
            next[shard] = now + .milliseconds(500)
            return true
        }
        guard due, let ask = asker.withLockedValue({ $0 }) else { return }
        ask(silent, shard)
    }

    func set(_ leader: NodeID, of shard: ShardID) {
        leaders.withLockedValue { if shard >= 0 && shard < $0.count { $0[shard] = leader } }
    }
}
