import NIOCore
import ParleyPlacement
import ParleyRaft
import ParleyWire

/// What the driver looks up for others: the meta state and where a shard lives, from this node's own replicas
/// when they know, else asked of the nodes that hold them.
extension RaftDriver {
    /// The meta state: this node's replica, or a copy fetched from a meta replica.
    public func metaState() -> EventLoopFuture<MetaState?> {
        if let first = metaDriver { return first.metaState().hop(to: loop) }
        return loop.flatSubmit {
            if let state = self.host.metaState { return self.loop.makeSucceededFuture(state) }
            return self.fetchMeta(from: self.metaCandidates()[...]).map { state in
                if let state { self.fetchedMeta = state }
                return state
            }
        }
    }

    /// The meta state once this node's meta replica holds every meta command committed when asked (read your
    /// writes, `RaftHost.catchUpMeta`); nil when it could not catch up (it knows no meta leader, or the read index
    /// never came). On a node without a meta replica, a meta replica's, as `metaState()`.
    func metaStateCaughtUp() -> EventLoopFuture<MetaState?> {
        if let first = metaDriver { return first.metaStateCaughtUp().hop(to: loop) }
        return loop.flatSubmit {
            guard self.host.metaState != nil else { return self.metaState() }
            let promise = self.loop.makePromise(of: MetaState?.self)
            self.host.catchUpMeta { caughtUp in promise.succeed(caughtUp ? self.host.metaState : nil) }
            self.scheduleReady()
            return promise.futureResult
        }
    }

    /// The meta state within `wait`: as `metaState()`, but a node without a meta replica whose fetch has not
    /// answered by then gets the copy it fetched last (nil: none yet), and the fetch goes on to refresh it.
    /// For `/status`: a partition or a paused meta replica kept a fetch waiting for its call timeout (10 s per
    /// node asked), so the status of a node without a meta replica took tens of seconds in exactly the minutes
    /// an operator reads it (seen in the 5-node chaos suite, session 46).
    public func metaState(within wait: TimeAmount) -> EventLoopFuture<MetaState?> {
        if let first = metaDriver { return first.metaState(within: wait).hop(to: loop) }
        return loop.flatSubmit {
            if let state = self.host.metaState { return self.loop.makeSucceededFuture(state) }
            let promise = self.loop.makePromise(of: MetaState?.self)
            let lastCopy = self.loop.scheduleTask(in: wait) { promise.succeed(self.fetchedMeta) }
            self.metaState().whenComplete { result in
                lastCopy.cancel()
                // A no-op once the last copy answered. A fetch that found no replica answering (each call to a
                // silent one gives way at once: `anotherAnswers`) may end before `wait`: the last copy then.
                promise.completeWith(result.map { $0 ?? self.fetchedMeta })
            }
            return promise.futureResult
        }
    }

    /// The nodes to ask for the meta group, likeliest holders first: the meta group sits on the first nodes of
    /// its rendezvous order over the cluster's nodes (it moves there as nodes join and leave, issue 17), and
    /// any other node may hold it while a move is under way.
    func metaCandidates() -> [NodeID] {
        let nodes = (host.metaState ?? fetchedMeta).map { Self.placementNodes(founders: host.config.nodes, state: $0) }
            ?? host.config.nodes
        let first = shardMap.metaReplicas(nodes: nodes)
        let founders = shardMap.metaReplicas(nodes: host.config.nodes)
        var out = first
        for n in founders + nodes where !out.contains(n) && n != nodeID { out.append(n) }
        return out
    }

    private func fetchMeta(from nodes: ArraySlice<NodeID>) -> EventLoopFuture<MetaState?> {
        guard let next = nodes.first else { return loop.makeSucceededFuture(nil) }
        return transport.call(next, path: "/rpc/v1/meta/state", body: [], givesWay: Self.anotherAnswers).hop(to: loop).flatMapThrowing { response in
            guard response.status == 200 else { throw RouteError.peerRefused(response.status) }
            return try MetaState(restoring: response.body)
        }.flatMapError { _ in self.fetchMeta(from: nodes.dropFirst()) }
    }

    /// The meta leader this node knows of (0 = none; nil when it holds no meta replica).
    public func metaLeader() -> EventLoopFuture<NodeID?> {
        if let first = metaDriver { return first.metaLeader().hop(to: loop) }
        return loop.submit { self.host.metaLeader }
    }

    /// Where a shard lives: its replicas (best first) and its leader as known to a replica (0 = none yet).
    public struct ShardPlacement: Sendable, Hashable {
        public var shard: ShardID
        public var replicas: [NodeID]
        public var leader: NodeID
        /// This node holds a voting replica of the shard that knows its leader: its own edge reads the shard's
        /// events there (issue 35, `pollHere`).
        public var currentHere = false
    }

    /// Answers "which node leads shard S": from this node's own replica when it holds one that knows, else by
    /// asking the shard's other replicas in turn.
    public func placement(of shard: ShardID) -> EventLoopFuture<ShardPlacement> {
        if let other = elsewhere(shard) { return other.placement(of: shard).hop(to: loop) }
        return loop.flatSubmit {
            let replicas = self.host.replicaNodes(of: shard)
            if let leader = self.host.leader(of: shard), leader != 0 {
                return self.loop.makeSucceededFuture(ShardPlacement(shard: shard, replicas: replicas, leader: leader,
                                                                    currentHere: replicas.contains(self.nodeID)))
            }
            // A replica here that knows no leader (an election, or cut off from the rest) asks the others.
            return self.askLeader(shard, replicas: replicas.filter { $0 != self.nodeID }[...]).map {
                ShardPlacement(shard: shard, replicas: replicas, leader: $0)
            }
        }
    }

    /// A command's call to `silent` — its link quiet for 0.75 s — of a shard this node holds no replica of, with
    /// no other leader known (`ShardLeaders.givesWay`; session 48): the shard's other replicas are asked at once
    /// who leads, each with a short wait, and a name other than `silent` is learned, so the call gives way to it
    /// at its link's next look. A node with a replica learns the successor from Raft itself.
    func askWhoLeads(_ shard: ShardID, besides silent: NodeID) {
        loop.preconditionInEventLoop()
        guard host.leader(of: shard) == nil, let leaders = loops?.leaders else { return }
        for node in host.replicaNodes(of: shard) where node != silent && node != nodeID {
            leaderKnown(to: node, of: shard, wait: .seconds(1)).whenSuccess { leader in
                if leader != silent { leaders.learned(leader, of: shard) }
            }
        }
    }

    /// The leader of `shard` that `node` knows (0: none), by `/rpc/v1/leader` within `wait`.
    private func leaderKnown(to node: NodeID, of shard: ShardID, wait: TimeAmount) -> EventLoopFuture<NodeID> {
        var w = ByteWriter()
        w.write(shard)
        return transport.call(node, path: Self.leaderPath, body: w.bytes, timeout: wait, givesWay: Self.anotherAnswers)
            .hop(to: loop).flatMapThrowing { response in
                guard response.status == 200 else { throw RouteError.peerRefused(response.status) }
                var r = ByteReader(response.body)
                return try r.readUInt64()
            }
    }

    /// A read that another node answers as well (the meta state, who leads a shard): its call to a node that went
    /// silent gives way on the silence alone (0.75 s, `PeerLink.silentAfter`) and the next node is asked — asked
    /// twice, a read changes nothing. A paused meta replica held a node's meta reads (a cluster tool's drain, the
    /// feature checks) until the link's heartbeat closed it after 4 s (session 48).
    static let anotherAnswers: @Sendable () -> Bool = { true }

    private func askLeader(_ shard: ShardID, replicas: ArraySlice<NodeID>) -> EventLoopFuture<NodeID> {
        guard let next = replicas.first else { return loop.makeSucceededFuture(0) }
        // A short wait: a paused replica must not hold the question up for a whole call timeout.
        return leaderKnown(to: next, of: shard, wait: .seconds(2))
            .flatMapError { _ in self.askLeader(shard, replicas: replicas.dropFirst()) }
    }
}
