import NIOCore
import ParleyRaft
import ParleyWire

/// How replicas move when the set of nodes changes (issue 17).
public struct ReplicaMoveSettings: Sendable, Hashable {
    /// Between looks at the placement table; zero turns planning and moving off.
    public var intervalMillis: Int64
    /// Replicas a node's leaders may have catching up (as learners, by snapshot) at once.
    public var maxLearnersPerNode: Int

    public init(intervalMillis: Int64 = 1_000, maxLearnersPerNode: Int = 2) {
        self.intervalMillis = intervalMillis
        self.maxLearnersPerNode = maxLearnersPerNode
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
    public static let joinPath = PeerStreamHandler.joinPath

    /// The nodes replicas are placed on: the founders and every registered node, less those marked draining
    /// or removed. Founders count before they have registered, so a node that starts late is not planned away.
    static func placementNodes(founders: [NodeID], state: MetaState) -> [NodeID] {
        let leaving = Set(state.nodes.values.filter { $0.state != .active }.map(\.id))
        let registered = state.nodes.values.filter { $0.state == .active }.map(\.id)
        return Set(founders).union(registered).subtracting(leaving).sorted()
    }

    /// One look, on `loop`: the meta leader plans; every node moves the shards it leads one step.
    func tendPlacement() {
        if host.metaLeader == nodeID, let state = host.metaState, state.placementVersion > 0 {
            let table = ReplicaMoves.table(shardMap: shardMap,
                                           nodes: Self.placementNodes(founders: host.config.nodes, state: state))
            if table != state.placement {
                host.proposeMeta(.setPlacement(expectedVersion: state.placementVersion, replicas: table),
                                 timestamp: Self.now()) { _ in }
                scheduleReady()
            }
        }
        let limit = moves.maxLearnersPerNode
        if let table = host.metaState?.placement {
            if !host.moveReplicas(toward: table, maxLearners: limit).isEmpty { scheduleReady() }
            return
        }
        guard !host.ledMemberships().isEmpty else { return }
        metaState().whenSuccess { state in
            guard let table = state?.placement, !table.isEmpty else { return }
            self.host.placementHint = table
            if !self.host.moveReplicas(toward: table, maxLearners: limit).isEmpty { self.scheduleReady() }
        }
    }

    /// `/rpc/v1/join`: the founders and the registry, for a node joining by address.
    func handleJoin() -> EventLoopFuture<PeerResponse> {
        metaState().map { state in
            let info = JoinInfo(answeredBy: self.nodeID, founders: self.host.config.nodes,
                                nodes: state.map { $0.nodes.values.sorted { $0.id < $1.id } } ?? [])
            return PeerResponse(status: state == nil ? 503 : 200, body: info.encoded())
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
