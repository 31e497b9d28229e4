import ParleyHost
import Foundation
import NIOCore
import ParleyRaft
import ParleyWire
import ParleyTransport
import ParleyShardState
import ParleyPlacement

/// How replicas move when the set of nodes changes (issue 17).
public struct ReplicaMoveSettings: Sendable, Hashable {
    /// Between looks at the placement table; zero turns planning and moving off.
    public var intervalMillis: Int64
    /// Replicas a node's leaders may have catching up (as learners, by snapshot) at once.
    public var maxLearnersPerNode: Int
    /// Snapshot bytes per second a node sends, over all its groups (`SnapshotPacer`); zero: no cap.
    public var snapshotBytesPerSecond: Int

    public init(intervalMillis: Int64 = 1_000, maxLearnersPerNode: Int = 2, snapshotBytesPerSecond: Int = 32 << 20) {
        self.intervalMillis = intervalMillis
        self.maxLearnersPerNode = maxLearnersPerNode
        self.snapshotBytesPerSecond = snapshotBytesPerSecond
    }
}

/// What a member tells a node joining by address: the founders (their static placement says where the
/// meta group lives) and the registry.
public struct JoinInfo: Sendable, Hashable {
    public var answeredBy: NodeID
    public var founders: [NodeID]
    public var nodes: [NodeRecord]

    public init(answeredBy: NodeID, founders: [NodeID], nodes: [NodeRecord]) {
        self.answeredBy = answeredBy
        self.founders = founders
        self.nodes = nodes
    }

    func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.write(answeredBy)
        w.write(founders.count)
        for f in founders { w.write(f) }
        w.write(nodes.count)
        for n in nodes {
            w.write(n.id)
            w.write(n.peerAddress)
            w.write(n.httpAddress)
            w.write(n.state.rawValue)
        }
        return w.bytes
    }

    init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        answeredBy = try r.readUInt64()
        let f = try r.readInt()
        guard (0...4_096).contains(f) else { throw CodecError.invalidValue("founders \(f)") }
        founders = try (0..<f).map { _ in try r.readUInt64() }
        let n = try r.readInt()
        guard (0...4_096).contains(n) else { throw CodecError.invalidValue("nodes \(n)") }
        nodes = try (0..<n).map { _ in
            let id = try r.readUInt64()
            let peer = try r.readString()
            let http = try r.readString()
            guard let state = NodeRecord.State(rawValue: try r.readByte()) else { throw CodecError.invalidValue("state") }
            return NodeRecord(id: id, peerAddress: peer, httpAddress: http, state: state)
        }
    }
}

/// Issue 17: the planner (on the meta leader) keeps the placement table equal to the rendezvous placement
/// over the cluster's nodes; every node's shard leaders move their groups toward it (`RaftHost.moveReplicas`).
extension RaftDriver {
    public static let joinPath = PeerProtocol.joinPath

    /// The nodes replicas are placed on: the founders and every registered node, less those marked removed
    /// or dropped. Founders count before they have registered, so a node that starts late is not planned
    /// away. A draining node keeps its replicas (issue 18: a drain comes before a restart, not a removal).
    static func placementNodes(founders: [NodeID], state: MetaState) -> [NodeID] {
        let leaving = Set(state.nodes.values.filter { $0.state == .removed || $0.state == .dropped }.map(\.id))
        let registered = state.nodes.values.filter { $0.state == .active || $0.state == .draining }.map(\.id)
        return Set(founders).union(registered).subtracting(leaving).sorted()
    }

    /// The nodes that may lead shards: the placement nodes that are not draining.
    static func leaderNodes(founders: [NodeID], state: MetaState) -> [NodeID] {
        let draining = Set(state.nodes.values.filter { $0.state == .draining }.map(\.id))
        return placementNodes(founders: founders, state: state).filter { !draining.contains($0) }
    }

    /// Where the meta group's replicas belong: the first nodes of its own rendezvous order.
    func metaTarget(_ state: MetaState) -> [NodeID] {
        shardMap.metaReplicas(nodes: Self.placementNodes(founders: host.config.nodes, state: state))
    }

    /// One look, on `loop`: the meta leader plans; every node moves the shards it leads one step.
    func tendPlacement() {
        let limit = moves.maxLearnersPerNode
        if let state = host.metaState {
            if host.metaLeader == nodeID, state.placementVersion > 0 {
                let nodes = Self.placementNodes(founders: host.config.nodes, state: state)
                let table = ReplicaMoves.table(shardMap: shardMap, nodes: nodes)
                if table != state.placement {
                    host.proposeMeta(.setPlacement(expectedVersion: state.placementVersion, replicas: table),
                                     timestamp: Self.now()) { _ in }
                    scheduleReady()
                }
                dropMovedOffNodes(state)
            }
            handOffLeaderships(state)
            let metaTarget = metaTarget(state)
            let leads = host.metaLeader == nodeID
            if !host.moveReplicas(toward: state.placement, meta: leads && state.placementVersion > 0 ? metaTarget : [],
                                  maxLearners: limit).isEmpty {
                scheduleReady()
            }
            collectRemovedReplicas(table: state.placement, metaTarget: metaTarget)
            return
        }
        metaState().whenSuccess { state in
            guard let state, !state.placement.isEmpty else { return }
            self.handOffLeaderships(state)
            self.host.placementHint = state.placement
            if !self.host.moveReplicas(toward: state.placement, maxLearners: limit).isEmpty { self.scheduleReady() }
            self.collectRemovedReplicas(table: state.placement, metaTarget: [])
        }
    }

    /// On the meta leader: a removed node that every group has moved off is dropped from the registry, and
    /// stops being anyone's peer. Only when the placement and the meta group no longer name it and every
    /// shard has one leader that answers whose configuration does not name it either.
    func dropMovedOffNodes(_ state: MetaState) {
        guard !checkingDrops else { return }
        let placed = Set(state.placement.joined()).union(metaTarget(state)).union(host.metaMembers)
        let candidates = state.nodes.values.filter { $0.state == .removed && !placed.contains($0.id) }.map(\.id).sorted()
        guard !candidates.isEmpty else { return }
        checkingDrops = true
        gatherLeads().whenComplete { result in
            self.checkingDrops = false
            guard case .success(let view) = result, view.shards.count == self.shardMap.shardCount else { return }
            let named = Set(view.shards.flatMap(\.members))
            for id in candidates where !named.contains(id) {
                self.host.proposeMeta(.setNodeState(id, .dropped), timestamp: Self.now()) { _ in }
                self.scheduleReady()
            }
        }
    }

    /// The moves under way in the groups this node leads, for `/status`.
    public func movesInProgress() -> EventLoopFuture<[RaftHost.MoveStatus]> {
        loop.submit {
            let state = self.host.metaState
            let table = state?.placement ?? self.host.placementHint ?? []
            return self.host.movesInProgress(table: table, metaTarget: state.map(self.metaTarget) ?? [],
                                             maxLearners: self.moves.maxLearnersPerNode)
        }
    }

    public static let removePath = "/rpc/v1/cluster/remove"
    static let membersPath = "/rpc/v1/members"
    static let membershipCalls = [
        PeerCall(path: joinPath) { driver, request in driver.handleJoin(request.joinCredential) },
        PeerCall(path: removePath) { driver, request in driver.handleRemove(request.body) },
        PeerCall(path: membersPath, shard: PeerCall.leadingGroup) { driver, request in driver.handleMembers(request.body) },
    ]

    /// `/rpc/v1/members`: whether this node leads a group, and the members it applied.
    func handleMembers(_ body: [UInt8]) -> EventLoopFuture<PeerResponse> {
        var r = ByteReader(body)
        guard let group = try? r.readUInt64(), r.isAtEnd else {
            return loop.makeSucceededFuture(PeerResponse(status: 400, body: []))
        }
        return loop.submit {
            guard let view = self.host.members(of: group) else { return PeerResponse(status: 404, body: []) }
            var w = ByteWriter()
            w.write(view.leads)
            w.write(view.members.count)
            for n in view.members { w.write(n) }
            return PeerResponse(status: 200, body: w.bytes)
        }
    }

    /// Replicas here that the placement has moved away and that no longer hear from their group: each asks
    /// the nodes the placement names for the group's leader, and is dropped when that leader's applied
    /// configuration does not name this node (a removed replica that never applied its own removal).
    func collectRemovedReplicas(table: [[NodeID]], metaTarget: [NodeID]) {
        for group in host.replicasOutsidePlacement(table: table, metaTarget: metaTarget) {
            let asked = group == ShardMap.metaGroup ? metaTarget
                : shardMap.shard(ofGroup: group).map { table[$0] } ?? []
            var w = ByteWriter()
            w.write(group)
            let answers = asked.filter { $0 != nodeID }.map { node in
                transport.call(node, path: Self.membersPath, body: w.bytes, timeout: .seconds(1)).hop(to: loop)
                    .map { response -> Bool? in
                        guard response.status == 200 else { return nil }
                        var r = ByteReader(response.body)
                        guard let leads = try? r.readBool(), leads, let n = try? r.readInt(), (0...64).contains(n),
                              let members = try? (0..<n).map({ _ in try r.readUInt64() }) else { return nil }
                        return members.contains(self.nodeID)
                    }.recover { _ in nil }
            }
            EventLoopFuture.whenAllComplete(answers, on: loop).whenSuccess { results in
                // Only a leader's word counts, and only "not a member".
                guard results.contains(where: { (try? $0.get()) == .some(false) }) else { return }
                try? self.host.dropReplica(group)
                self.scheduleReady()
            }
        }
    }

    /// `/rpc/v1/cluster/remove` (`parley cluster remove --node ID`): marks a node removed, so the planner
    /// moves every replica off it (from the surviving replicas when it is down). Refused, changing nothing,
    /// for a node the registry does not know, or when the nodes left could not hold `replicationFactor` copies
    /// of every shard. Removing a removed node again answers that it is.
    func handleRemove(_ body: [UInt8]) -> EventLoopFuture<PeerResponse> {
        registryChange(body) { id, record, state in
            guard record.state != .removed, record.state != .dropped else {
                // Idempotent: a retry after an answer that was lost (a meta election) finds it done.
                return self.loop.makeSucceededFuture(.text(200, record.state == .dropped
                    ? "node \(id) has left the cluster (its replicas moved off)"
                    : "node \(id) is marked removed (it already was); its replicas are moving off"))
            }
            let remaining = Self.placementNodes(founders: self.host.config.nodes, state: state).filter { $0 != id }
            guard remaining.count >= self.shardMap.replicationFactor else {
                return self.loop.makeSucceededFuture(.text(409, "removing node \(id) would leave \(remaining.count) nodes "
                    + "(\(remaining.map(String.init).joined(separator: ", "))) for \(self.shardMap.replicationFactor) replicas per shard: add a node first"))
            }
            return self.setNodeState(id, .removed,
                                     done: "node \(id) is marked removed; its replicas move to nodes \(remaining.map(String.init).joined(separator: ", "))")
        }
    }

    /// A registry change about the node a request names (`parley cluster remove|drain|undrain`): reads the id
    /// and the registry, answers 400 / 503 / 404 for a bad id, no meta group, an unknown node; else `decide`.
    func registryChange(_ body: [UInt8],
                        decide: @escaping (NodeID, NodeRecord, MetaState) -> EventLoopFuture<PeerResponse>) -> EventLoopFuture<PeerResponse> {
        var r = ByteReader(body)
        guard let id = try? r.readUInt64(), r.isAtEnd, id != 0 else {
            return loop.makeSucceededFuture(.text(400, "bad node id"))
        }
        return metaState().flatMap { state -> EventLoopFuture<PeerResponse> in
            guard let state else { return self.loop.makeSucceededFuture(.text(503, "the meta group cannot be reached")) }
            guard let record = state.nodes[id] else {
                return self.loop.makeSucceededFuture(.text(404, "node \(id) is not in the registry"))
            }
            return decide(id, record, state)
        }
    }

    /// Proposes a node's new state; answers `done`, or why it was not applied.
    func setNodeState(_ id: NodeID, _ state: NodeRecord.State, done: String) -> EventLoopFuture<PeerResponse> {
        submitMeta(.setNodeState(id, state), deadline: .now() + .seconds(15)).map { outcome in
            if case .refused(_, let why) = outcome { return .text(409, why) }
            return .text(200, done)
        }.recover { .text(503, "not applied: \($0)") }
    }

    /// `/rpc/v1/join`: the founders and the registry, for a node joining by address.
    func handleJoin(_ credential: JoinCredential?) -> EventLoopFuture<PeerResponse> {
        metaState().flatMap { state in
            let info = JoinInfo(answeredBy: self.nodeID, founders: self.host.config.nodes,
                                nodes: state.map { $0.nodes.values.sorted { $0.id < $1.id } } ?? [])
            guard let state else { return self.loop.makeSucceededFuture(PeerResponse(status: 503, body: info.encoded())) }
            return self.claimJoin(credential, registry: state).map { refusal in
                refusal ?? PeerResponse(status: 200, body: info.encoded())
            }
        }
    }

    /// Issue 33: a join credential is made for any node, so each node remembers only the nonces it saw. The
    /// first join call of a stream claims its nonce in the meta group (the claim's request key), so the same
    /// credential replayed to another member within its window is refused there (401) and learns nothing.
    /// While a node of the cluster does not read the claim yet (a rolling upgrade), each node's memory is all.
    private func claimJoin(_ credential: JoinCredential?, registry: MetaState) -> EventLoopFuture<PeerResponse?> {
        guard let credential else { return loop.makeSucceededFuture(nil) }
        let members = registry.nodes.values.filter { $0.state != .dropped }.map(\.id)
        let key = RequestKey(id: "\(PeerTokenCheck.joinScope)\u{1F}\(credential.nonce)",
                             expiresAt: RequestKey.expiry(signedAt: credential.time, now: Int64(Date().timeIntervalSince1970),
                                                          window: PeerAuth.window))
        let transport = self.transport
        return loop.makeFutureWithTask { await transport.everyPeerHas(.appSigning, among: members) }
            .flatMap { everyNodeReadsIt in
                guard everyNodeReadsIt else { return self.loop.makeSucceededFuture(nil) }
                return self.submitMeta(.claimNonce(scope: PeerTokenCheck.joinScope), requestKey: key).map { outcome in
                    guard case .refused(let code, let message) = outcome else { return nil }
                    return PeerResponse(status: code == RequestRefusal.replayed.code ? 401 : 503, body: Array(message.utf8))
                }
            }
    }

    /// Asks the member behind the transport's `PeerTokenCheck.anyNode` link (`--join HOST:PORT`).
    public static func askToJoin(_ transport: PeerTransport) -> EventLoopFuture<JoinInfo> {
        transport.call(PeerTokenCheck.anyNode, path: joinPath, body: [], timeout: .seconds(3))
            .flatMapThrowing { response in
                guard response.status == 200 else {
                    throw RouteError.peerRefused(response.status)
                }
                return try JoinInfo(decoding: response.body)
            }
    }
}
