import NIOCore
import ParleyRaft
import ParleyWire
import ParleyTransport
import ParleyPlacement

/// How often the leader balancer looks, and how much it may move at once.
public struct LeaderBalanceSettings: Sendable, Hashable {
    /// Between rounds; zero turns balancing off.
    public var intervalMillis: Int64
    /// Transfers asked for per round, over the whole cluster (a transfer costs the shard one election, a
    /// few milliseconds in which its proposals are refused and retried).
    public var transfersPerRound: Int

    public init(intervalMillis: Int64 = 1_000, transfersPerRound: Int = 4) {
        self.intervalMillis = intervalMillis
        self.transfersPerRound = transfersPerRound
    }

    public static let off = LeaderBalanceSettings(intervalMillis: 0, transfersPerRound: 0)
}

/// Issue 17, leader balance: one balancer, on the meta leader, asks every node which shards it leads, plans
/// with `LeaderBalance` and asks the leaders to hand over. A round moves nothing unless every shard has one
/// leader among the nodes that answered (so never during an election or a partition), and nodes that do not
/// answer within the call timeout are given no leaders.
extension RaftDriver {
    static let leadsPath = "/rpc/v1/leads"
    static let transferPath = "/rpc/v1/transfer"
    static let balanceCalls = [
        PeerCall(path: leadsPath) { driver, request in driver.handleBalanceCall(request) },
        PeerCall(path: transferPath, shard: PeerCall.leadingShard) { driver, request in driver.handleBalanceCall(request) },
    ]
    private static let balanceCallTimeout = TimeAmount.milliseconds(800)

    /// Every shard as the nodes that may lead it see it: the shards each node leads, from every placement
    /// node that answers within the call timeout (on `loop`).
    func gatherLeads(leadersOnly: Bool = false) -> EventLoopFuture<(nodes: [NodeID], shards: [LeaderBalance.Shard])> {
        // Every node that holds replicas: the founders and the nodes that joined (issue 17); for balancing,
        // only those that may lead (not draining, issue 18).
        let nodes = host.metaState.map {
            leadersOnly ? Self.leaderNodes(founders: host.config.nodes, state: $0)
                : Self.placementNodes(founders: host.config.nodes, state: $0)
        } ?? host.config.nodes
        let views = nodes.map { node -> EventLoopFuture<(NodeID, [LeaderBalance.Shard])?> in
            if node == nodeID { return nodeLedShards().map { (node, $0) } }
            return transport.call(node, path: Self.leadsPath, body: [], timeout: Self.balanceCallTimeout).hop(to: loop)
                .flatMapThrowing { response -> (NodeID, [LeaderBalance.Shard])? in
                    guard response.status == 200 else { return nil }
                    return (node, try Self.decodeLeads(response.body))
                }.recover { _ in nil }
        }
        return EventLoopFuture.whenAllSucceed(views, on: loop).map { all in
            let answered = all.compactMap { $0 }
            // A shard two nodes claim to lead (a deposed leader that has not heard yet) is left out.
            let claims = Dictionary(grouping: answered.flatMap(\.1), by: \.shard)
            return (answered.map(\.0), claims.values.compactMap { $0.count == 1 ? $0[0] : nil })
        }
    }

    /// The shards this node leads, over all its Raft loops (on `loop`).
    func nodeLedShards() -> EventLoopFuture<[LeaderBalance.Shard]> {
        guard partition.count > 1, let loops else { return loop.makeSucceededFuture(host.ledShards()) }
        return loops.ledShards().hop(to: loop)
    }

    /// One round, on `loop`: nothing unless this node leads the meta group and the last round has ended.
    func balanceLeaders() {
        guard host.metaLeader == nodeID, !balancing else { return }
        balancing = true
        let limit = leaderBalance.transfersPerRound
        gatherLeads(leadersOnly: true).whenComplete { result in
            defer { self.balancing = false }
            guard case .success(let view) = result else { return }
            // Only a settled cluster is balanced: while a shard has no leader that answers (an election, a
            // paused or cut-off node), moving others would add elections to a cluster already having them.
            guard view.shards.count == self.shardMap.shardCount else { return }
            let plan = LeaderBalance(nodes: view.nodes, shards: view.shards)
            for t in plan.transfers(limit: limit) { self.askTransfer(t) }
        }
    }

    private func askTransfer(_ t: LeaderBalance.Transfer) {
        host.countBalanceTransferAsked()
        if t.from == nodeID {
            let leader = elsewhere(t.shard) ?? self
            leader.loop.execute {
                _ = leader.host.transferLeadership(shard: t.shard, to: t.to)
                leader.scheduleReady()
            }
            return
        }
        var w = ByteWriter()
        w.write(t.shard)
        w.write(t.to)
        _ = transport.call(t.from, path: Self.transferPath, body: w.bytes, timeout: Self.balanceCallTimeout)
    }

    /// `/rpc/v1/leads` and `/rpc/v1/transfer`.
    func handleBalanceCall(_ request: PeerRequest) -> EventLoopFuture<PeerResponse> {
        if request.path == Self.leadsPath {
            return loop.flatSubmit { self.nodeLedShards() }.map { PeerResponse(status: 200, body: Self.encodeLeads($0)) }
        }
        var r = ByteReader(request.body)
        guard let shard = try? r.readInt(), let to = try? r.readUInt64(), r.isAtEnd,
              (0..<shardMap.shardCount).contains(shard) else {
            return loop.makeSucceededFuture(PeerResponse(status: 400, body: Array("bad transfer".utf8)))
        }
        return loop.submit {
            guard self.host.transferLeadership(shard: shard, to: to) else {
                return PeerResponse(status: 409, body: Array("not the leader of shard \(shard), or \(to) is no voter".utf8))
            }
            self.scheduleReady()
            return PeerResponse(status: 200, body: [])
        }
    }

    static func encodeLeads(_ shards: [LeaderBalance.Shard]) -> [UInt8] {
        var w = ByteWriter()
        w.write(shards.count)
        for s in shards {
            w.write(s.shard)
            w.write(s.leader)
            w.write(s.replicas.count)
            for node in s.replicas { w.write(node) }
        }
        // Each shard's members after all of them: a reader that stops after the shards still reads the rest.
        for s in shards {
            w.write(s.members.count)
            for node in s.members { w.write(node) }
        }
        return w.bytes
    }

    static func decodeLeads(_ bytes: [UInt8]) throws -> [LeaderBalance.Shard] {
        var r = ByteReader(bytes)
        let count = try r.readInt()
        guard count >= 0, count <= 1 << 16 else { throw CodecError.invalidValue("shard count \(count)") }
        var out: [LeaderBalance.Shard] = []
        for _ in 0..<count {
            let shard = try r.readInt()
            let leader = try r.readUInt64()
            let n = try r.readInt()
            guard n >= 0, n <= 64 else { throw CodecError.invalidValue("voter count \(n)") }
            var replicas: [NodeID] = []
            for _ in 0..<n { replicas.append(try r.readUInt64()) }
            out.append(LeaderBalance.Shard(shard: shard, leader: leader, replicas: replicas))
        }
        guard !r.isAtEnd else { return out }  // from a node that sends no members
        for i in out.indices {
            let n = try r.readInt()
            guard n >= 0, n <= 64 else { throw CodecError.invalidValue("member count \(n)") }
            out[i].members = try (0..<n).map { _ in try r.readUInt64() }
        }
        return out
    }
}
