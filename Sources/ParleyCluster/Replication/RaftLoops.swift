import ParleyHost
import Metrics
import NIOCore
import ParleyRaft
import ParleyRooms
import ParleyIM
import ParleyWire
import ParleyTransport
import ParleyRaftWire
import ParleyShardState
import ParleyPlacement

/// A node's Raft groups on several event loops (issue 35, docs/cores.md): one `RaftDriver` and its
/// `RaftHost` per loop, shard `s` on loop `s % K`, the meta group on the first. Each loop ticks, steps,
/// writes, applies and answers its own groups; they share the node's database (its writes serialize there)
/// and the peer transport. This is the node's one way in: commands, peers' batches and calls, and the
/// observations go to the loop of the shard they name, and node-wide questions are put to every loop.
public final class RaftLoops: Sendable {
    public let drivers: [RaftDriver]
    public let shardMap: ShardMap
    public let nodeID: NodeID
    /// SPEC W3: the node's webhook caller, which shard leaders ask about messages in checked rooms.
    public let preSend: (any PreSendGate)?
    /// The leader each of this node's shard replicas knows, for the edge loops (issue 35).
    public let leaders: ShardLeaders
    let transport: PeerTransport
    /// `parley_edge_commands_to_leader_total{result}` (`RaftLoops+StraightToLeader`).
    let straightCounters: (applied: Counter, rerouted: Counter)
    /// `parley_peer_calls_served_total{path}`: what peers and the cluster tool ask of this node, by call.
    private let callsServed: [String: Counter]

    /// One driver per loop of `loops`. `makeHost` builds each loop's host for its partition; `firstStart`
    /// says whether the database held no group before any host opened it (only then are groups founded).
    public init(loops: [EventLoop], transport: PeerTransport, tickInterval: TimeAmount,
                leaderBalance: LeaderBalanceSettings = LeaderBalanceSettings(),
                moves: ReplicaMoveSettings = ReplicaMoveSettings(),
                makeHost: (_ partition: HostPartition, _ send: @escaping (NodeID, [RaftEnvelope]) -> Void) throws -> RaftHost,
                edgeLeaseMillis: Int64 = 6_000, preSend: (any PreSendGate)? = nil,
                webhookCopies: (any WebhookCopyPoster)? = nil, webhookCopyMaxAgeMillis: Int64 = 3_600_000,
                metrics: any MetricsFactory = NOOPMetricsHandler.instance) throws {
        precondition(!loops.isEmpty)
        let routeMetrics = RouteMetrics(factory: metrics, paths: RaftDriver.peerCalls.keys)
        let k = loops.count
        // The node's allowances are shared out: each loop moves its own groups' replicas and sends their
        // snapshots.
        var share = moves
        share.maxLearnersPerNode = max(1, moves.maxLearnersPerNode / k)
        share.snapshotBytesPerSecond = moves.snapshotBytesPerSecond / k
        drivers = try loops.enumerated().map { i, loop in
            try RaftDriver(loop: loop, transport: transport, tickInterval: tickInterval, leaderBalance: leaderBalance,
                           moves: share, makeHost: { send in
                               try makeHost(HostPartition(index: i, count: k), send)
                           }, edgeLeaseMillis: edgeLeaseMillis, metrics: routeMetrics)
        }
        shardMap = drivers[0].shardMap
        nodeID = drivers[0].nodeID
        self.preSend = preSend
        self.transport = transport
        straightCounters = (routeMetrics.commandsToLeader, routeMetrics.commandsToLeaderRerouted)
        callsServed = routeMetrics.peerCallsServed
        let leaders = ShardLeaders(shardCount: shardMap.shardCount)
        self.leaders = leaders
        // The drivers, not `self`: the leaders are the loops' own, and hold no way back to them.
        let drivers = self.drivers, count = drivers.count
        leaders.whenSilent { silent, shard in
            let d = count == 1 ? drivers[0] : drivers[HostPartition.index(ofShard: shard, count: count)]
            d.loop.execute { d.askWhoLeads(shard, besides: silent) }
        }
        for d in drivers {
            d.host.leaderSeen = { shard, leader in leaders.set(leader, of: shard) }
            d.loops = self
            d.preSend = preSend
            d.webhookCopies = webhookCopies
            d.webhookCopyMaxAgeMillis = webhookCopyMaxAgeMillis
        }
    }

    /// The driver of the loop that holds `shard` (the first for a shard out of range: it refuses it).
    public func driver(for shard: ShardID) -> RaftDriver {
        guard drivers.count > 1, (0..<shardMap.shardCount).contains(shard) else { return drivers[0] }
        return drivers[HostPartition.index(ofShard: shard, count: drivers.count)]
    }

    private var first: RaftDriver { drivers[0] }

    public func start() { for d in drivers { d.start() } }

    public func stop() -> EventLoopFuture<Void> {
        EventLoopFuture.andAllSucceed(drivers.map { $0.stop() }, on: first.loop)
    }

    // MARK: Peers

    /// A batch from a peer: each loop's envelopes go to it, in the order they came.
    public func receive(from peer: NodeID, _ batch: [RaftEnvelope]) {
        guard drivers.count > 1 else { return first.receive(from: peer, batch) }
        var parts = [[RaftEnvelope]](repeating: [], count: drivers.count)
        for envelope in batch {
            parts[HostPartition.index(ofGroup: envelope.group, shardMap: shardMap, count: drivers.count)].append(envelope)
        }
        for (i, part) in parts.enumerated() where !part.isEmpty { drivers[i].receive(from: peer, part) }
    }

    public func peerUnreachable(_ peer: NodeID) { for d in drivers { d.peerUnreachable(peer) } }
    public func peerReachable(_ peer: NodeID) { for d in drivers { d.peerReachable(peer) } }

    /// Serves a peer's or the cluster tool's RPC on the loop of the shard it names (`PeerCall.shard`).
    public func handle(_ request: PeerRequest) -> EventLoopFuture<PeerResponse> {
        guard let call = RaftDriver.peerCalls[request.path] else {
            return first.loop.makeSucceededFuture(PeerResponse.text(404, "no such call"))
        }
        callsServed[request.path]?.increment()
        let driver = drivers.count == 1 ? first : call.shard(request.body, shardMap).map(driver(for:)) ?? first
        return call.serve(driver, request)
    }

    // MARK: Commands

    /// The one road into a shard (`RaftDriver.submit(_:deadline:)`), on the driver of the shard's loop. The
    /// caller reads the outcome as its command's (`ShardOutcome.roomAnswer`, `.imAnswer`).
    public func submit(_ request: ShardRequest, deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<ShardOutcome> {
        driver(for: request.shard).submit(request, deadline: deadline)
    }

    public func submitMeta(_ command: MetaCommand, requestKey: RequestKey? = nil,
                           deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<MetaOutcome> {
        first.submitMeta(command, requestKey: requestKey, deadline: deadline)
    }

    public func shard(ofUser account: String) -> ShardID { shardMap.shard(ofUser: account) }
    public func shard(ofTeam teamId: String) -> ShardID { shardMap.shard(ofTeam: teamId) }

    // MARK: Feeds and placement

    public func events(shard: ShardID, after cursor: LogIndex?, edgeId: String, waitMillis: Int,
                       at node: NodeID) -> EventLoopFuture<ShardEventPage> {
        driver(for: shard).events(shard: shard, after: cursor, edgeId: edgeId, waitMillis: waitMillis, at: node)
    }

    /// The loop (index into `drivers`) that runs the shard's group: a batched local poll reads one loop's shards.
    public func partition(of shard: ShardID) -> Int { HostPartition.index(ofShard: shard, count: drivers.count) }

    /// Issue 35: several shards of loop `partition`, read from this node's own replicas in one poll
    /// (`RaftDriver.localEvents`).
    public func localEvents(_ cursors: [ShardID: LogIndex], partition: Int, edgeId: String, waitMillis: Int)
        -> EventLoopFuture<[ShardID: RaftDriver.LocalFeedAnswer]> {
        drivers[partition].localEvents(cursors, edgeId: edgeId, waitMillis: waitMillis)
    }

    public func nudgeLocalFeed(partition: Int, edgeId: String) {
        drivers[partition].nudgeLocalFeed(edgeId: edgeId)
    }

    public func placement(of shard: ShardID) -> EventLoopFuture<RaftDriver.ShardPlacement> {
        driver(for: shard).placement(of: shard)
    }

    public func metaState() -> EventLoopFuture<MetaState?> { first.metaState() }
    public func metaState(within wait: TimeAmount) -> EventLoopFuture<MetaState?> { first.metaState(within: wait) }
    public func metaLeader() -> EventLoopFuture<NodeID?> { first.metaLeader() }
    public func ownRegistryState() -> EventLoopFuture<NodeRecord.State?> { first.ownRegistryState() }

    // MARK: The node as a whole

    /// Each periodic duty once for the node: one service per duty that runs it on every loop.
    public var duties: [DriverDuty] {
        let each = drivers.map(\.duties)
        return each[0].indices.map { i in
            let runs = each.map { $0[i].run }
            let loop = first.loop
            return DriverDuty(name: each[0][i].name, initialDelay: each[0][i].initialDelay, period: each[0][i].period) {
                EventLoopFuture.andAllComplete(runs.map { $0() }, on: loop)
            }
        }
    }

    /// The shards this node leads, from every loop.
    func ledShards() -> EventLoopFuture<[LeaderBalance.Shard]> {
        gather { d in d.host.ledShards() }
    }

    public func status() -> EventLoopFuture<[RaftHost.ShardStatus]> {
        gather { $0.host.status() }.map { $0.sorted { $0.shard < $1.shard } }
    }

    public func movesInProgress() -> EventLoopFuture<[RaftHost.MoveStatus]> {
        EventLoopFuture.whenAllSucceed(drivers.map { $0.movesInProgress() }, on: first.loop).map { $0.flatMap { $0 } }
    }

    public func stateDigests() -> EventLoopFuture<[ShardID: UInt64]> {
        EventLoopFuture.whenAllSucceed(drivers.map { $0.stateDigests() }, on: first.loop).map { parts in
            parts.reduce(into: [:]) { all, part in all.merge(part) { a, _ in a } }
        }
    }

    /// The first storage failure of any loop (each stops driving its groups after one).
    public var failure: Error? { drivers.lazy.compactMap(\.failure).first }

    /// Messages refused over budget on every loop (for /metrics).
    public var sendsOverBudget: Int { drivers.reduce(0) { $0 + $1.sendsOverBudget } }

    /// `read` on every loop's host, on its loop, concatenated in loop order.
    private func gather<T: Sendable>(_ read: @escaping @Sendable (RaftDriver) -> [T]) -> EventLoopFuture<[T]> {
        EventLoopFuture.whenAllSucceed(drivers.map { d in d.loop.submit { read(d) } }, on: first.loop)
            .map { $0.flatMap { $0 } }
    }
}
