import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyAPI
import ParleyCluster
import ParleyHost
import ParleyEdge
import ParleyRaft
import ParleyRooms
import ParleyStorage
import ServiceLifecycle
import ParleyTransport
import ParleyPlacement

/// One running node: its database, the peer transport, the Raft loops with every shard replica placed
/// here, and the HTTP port with `/status`. `run()` serves until a graceful shutdown (SIGTERM / SIGINT).
public final class NodeRuntime: Service, StatusSource, @unchecked Sendable {
    public let config: NodeConfig
    public let logger: Logger
    private let started = Date()
    private let network: MultiThreadedEventLoopGroup
    private let raftLoop: MultiThreadedEventLoopGroup
    public let transport: PeerTransport
    /// The node's Raft groups, on `config.raftLoopCount` loops.
    public let raft: RaftLoops
    /// SPEC W3: the calls to app servers before a message in a checked room is stored.
    let webhooks: WebhookCaller
    /// The edge's view of the cluster (commands, event feeds, tokens, addresses).
    public let edgeCluster: NodeEdgeCluster
    /// The client edge, once `run()` has made it (its figures go on `/status`).
    let edge = NIOLockedValueBox<Edge?>(nil)
    /// Set once this node held every replica the placement puts on it (`NodeStatusReport.replicasToFill`).
    private let replicasFilled = NIOLockedValueBox(false)
    let activity = NodeActivity()
    /// This node's Prometheus registry (`/metrics`); components record through `metrics.factory`.
    public let metrics: NodeMetrics
    /// The cluster's founding nodes (`--peers`, or learned when joining).
    let founders: [NodeID]
    /// Where a node that joined keeps its founders and peers (nil on a founding node).
    let membershipFile: ClusterMembershipFile?

    /// SPEC T1: the client port's certificate, loaded at start (files that do not load stop the node here).
    let clientTLS: ClientTLS?

    /// Opens the database, binds the peer port and builds every replica; nothing ticks until `run()`.
    public init(config: NodeConfig, logger: Logger) async throws {
        try config.validate()
        self.config = config
        self.logger = logger
        clientTLS = try config.clientTLS.map {
            try ClientTLS(certificatePath: $0.certificatePath, privateKeyPath: $0.privateKeyPath, logger: logger)
        }
        let metrics = NodeMetrics()
        self.metrics = metrics
        try DataFolder.prepare(config.dataDirectory)
        let database = try NodeDatabase(path: config.dataDirectory + "/node.sqlite", durable: config.durable,
                                        metrics: metrics.factory, cacheBytes: config.memory.sqliteCacheBytes)
        network = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        raftLoop = MultiThreadedEventLoopGroup(numberOfThreads: config.raftLoopCount)
        // The transport and the Raft loops call each other; the reference is set once both exist.
        let ref = DriverReference()
        var peerConfig = PeerTransport.Config(nodeID: config.id, host: config.peerListen.host,
                                              port: config.peerListen.port, secret: config.secret)
        peerConfig.maxFrameBytes = 64 << 20
        peerConfig.tls = config.peerTLS
        // Peer connections live on the Raft loops: a batch from a peer is stepped, and the cycle's messages
        // are written, without a hop between threads (each hop was a wake-up on the command's path) — on a
        // node with one loop always; with several, when the link's loop is the loop of the batch's groups.
        transport = try await PeerTransport(
            config: peerConfig, group: raftLoop,
            onRaft: { from, batch in ref.raft?.receive(from: from, batch) },
            onRequest: { request, loop in
                if request.path == NodeRuntime.statusPath, let status = ref.status {
                    return loop.makeFutureWithTask { PeerResponse(status: 200, body: await status()) }
                }
                return ref.raft?.handle(request) ?? loop.makeSucceededFuture(PeerResponse(status: 503, body: []))
            },
            onPeerDown: { peer in ref.raft?.peerUnreachable(peer) },
            onPeerUp: { peer in ref.raft?.peerReachable(peer) }, metrics: metrics.factory, logger: logger)
        // Issue 17: a node that joined a running cluster knows its founders and peers from the cluster (through
        // `--join` the first time, from the data folder after), not from `--peers`.
        var founders = config.peers.keys.sorted()
        var peerAddresses = config.peers
        var founding = true
        let membershipFile = ClusterMembershipFile(directory: config.dataDirectory)
        if let saved = membershipFile.load() {
            founders = saved.founders
            peerAddresses.merge(saved.peers) { own, _ in own }
            founding = false
        } else if let seed = config.join {
            let joined = try await Self.learnCluster(through: seed, transport: transport, config: config,
                                                     holdsData: !(try database.groupIDs().isEmpty), logger: logger)
            founders = joined.founders
            peerAddresses.merge(joined.peers) { own, _ in own }
            try membershipFile.save(joined)
            founding = false
        }
        self.membershipFile = founding ? nil : membershipFile
        self.founders = founders
        var peers: [NodeID: (host: String, port: Int)] = [:]
        for (id, address) in peerAddresses where id != config.id { peers[id] = (address.host, address.port) }
        await transport.setPeers(peers)

        var groupConfig = RaftConfig(id: config.id, electionTick: config.electionTicks, heartbeatTick: 1,
                                     quiesceAfterTicks: config.quiesceAfterTicks)
        groupConfig.maxInflightBytes = 32 << 20
        groupConfig.deferCommitNotice = config.commitNoticeMillis > 0
        // SPEC D1: what one group hands to apply in one cycle. All groups' readies of a cycle are held at once:
        // at Raft's default (64 MiB) a node restarted after 100,000 messages replayed its 64 logs in one cycle
        // and held ~250 MB for it.
        groupConfig.maxCommittedSizePerReady = 128 << 10
        var hostConfig = RaftHost.Config(
            nodeID: config.id, nodes: founders,
            shardMap: ShardMap(shardCount: config.shardCount, replicationFactor: config.replicationFactor),
            raft: groupConfig, boot: UInt64(Date().timeIntervalSince1970 * 1000))
        hostConfig.founding = founding
        hostConfig.commitNoticeMillis = config.commitNoticeMillis
        hostConfig.memory = config.memory
        // The Raft log's bound is the node's: each loop's host keeps its share.
        hostConfig.memory.raftLogBytes = config.memory.raftLogBytes / max(1, config.raftLoopCount)
        let transport = self.transport
        let factory = metrics.factory
        let firstStart = try database.groupIDs().isEmpty
        let metaSecrets = MetaSecrets(clusterSecret: config.secret)
        let webhooks = WebhookCaller(group: network, rule: config.webhookTargets, legacyRoomsApp: config.legacyRoomsApp,
                                     secrets: metaSecrets, logger: logger, metrics: metrics.factory)
        self.webhooks = webhooks
        raft = try RaftLoops(loops: Array(raftLoop.makeIterator()), transport: transport,
                             tickInterval: .milliseconds(Int64(config.tickMillis)),
                             leaderBalance: config.leaderBalance, moves: config.moves, makeHost: { partition, send in
            var partConfig = hostConfig
            partConfig.partition = partition
            return try RaftHost(config: partConfig, database: database, send: send, metrics: factory,
                                firstStart: firstStart)
        }, preSend: webhooks, webhookCopies: webhooks, webhookCopyMaxAgeMillis: Int64(config.webhookDropAfterSeconds) * 1000,
           metrics: factory)
        ref.raft = raft
        edgeCluster = NodeEdgeCluster(raft: raft, transport: transport, boot: hostConfig.boot,
                                      metaSecrets: metaSecrets, metrics: metrics.edge)
        ref.status = { [weak self] in
            guard let self else { return [] }
            return Array((try? JSONEncoder().encode(await self.statusReport(withDigests: false))) ?? Data())
        }
    }

    /// Serves the HTTP port and drives Raft until asked to stop.
    public func run() async throws {
        raft.start()
        let hosted = try await raft.status().get().count
        let drainedBefore = FileManager.default.fileExists(atPath: drainedForStopFile.path)
        // The node's background work, services of the one ServiceGroup below (issue 34). Listed before the
        // listeners, so a graceful shutdown (which goes in reverse order) stops serving first and these after.
        let background = [
            NodeBackgroundService("joining the meta group") {
                await self.joinMeta()
                await self.undrainAfterStop(drainedBefore: drainedBefore)
                await self.bootstrapApps()
            },
            NodeBackgroundService("watching elections") { await self.watchElections() },
            NodeBackgroundService("following the registry") { await self.followRegistry() },
            NodeBackgroundService("following drains") { await self.followDrain() },
            NodeBackgroundService("sampling activity") { await self.sampleActivity() },
        ].map(\.configuration) + raft.duties.map { NodeBackgroundService(every: $0).configuration }
        logger.info("node started", metadata: [
            "node": "\(config.id)", "http": "\(config.listen)", "peer": "\(config.peerListen)", "shards": "\(hosted)",
            "peerTLS": "\(config.peerTLS != nil)", "clientTLS": "\(config.clientTLS != nil)",
        ])
        if config.peerTLS == nil, !["127.0.0.1", "::1", "localhost"].contains(config.peerListen.host) {
            logger.warning("the peer port is cleartext h2 on a network address: run it on a private network only, or give --peer-tls-cert, --peer-tls-key and --peer-tls-ca (docs/operations.md, Security)")
        }
        if config.clientTLS == nil, !["127.0.0.1", "::1", "localhost"].contains(config.listen.host) {
            logger.notice("the client port is plain HTTP on a network address: give --tls-cert and --tls-key, or put a TLS-terminating proxy in front (SPEC T1, docs/operations.md, TLS)")
        }
        let router = Router()
        // SPEC A4: operator pages on their own listener when one is set; probes on both.
        let opsRouter = config.opsListen == nil ? router : Router()
        StatusRoutes.addOperatorRoutes(to: opsRouter, source: self)
        ObservabilityRoutes.add(to: opsRouter, source: self)
        StatusRoutes.addProbes(to: router, source: self)
        if opsRouter !== router { StatusRoutes.addProbes(to: opsRouter, source: self) }
        ServerAPI(backend: NodeServerAPIBackend(raft: raft, edges: edgeCluster, webhookTargets: config.webhookTargets),
                  legacyRoomsApp: config.legacyRoomsApp, logger: logger, metrics: metrics.factory).add(to: router)
        // Client WebSockets (`/ws`) are upgraded on the same port and then served by NIO handlers (EdgeHTTPChannel).
        var edgeSettings = EdgeSettings()
        edgeSettings.legacyRoomsApp = config.legacyRoomsApp
        if let cap = config.maxConnections { edgeSettings.maxConnections = cap }
        if let cap = config.maxConnectionsPerAddress { edgeSettings.maxConnectionsPerAddress = cap }
        if let spacing = config.deliverySpacingMillis { edgeSettings.deliverySpacingMillis = spacing }
        let edge = Edge(cluster: edgeCluster, settings: edgeSettings, logger: logger, metrics: metrics.edge)
        self.edge.withLockedValue { $0 = edge }
        let app = Application(router: router,
                              server: EdgeHTTPChannel.server(edge: edge, tls: clientTLS),
                              configuration: .init(address: .hostname(config.listen.host, port: config.listen.port),
                                                   serverName: "parley"),
                              eventLoopGroupProvider: .shared(network), logger: logger)
        // SIGTERM / SIGINT end the HTTP server gracefully; then Raft and the transport stop.
        var listeners: [any Service] = [app]
        if let ops = config.opsListen {
            listeners.append(Application(router: opsRouter,
                                         configuration: .init(address: .hostname(ops.host, port: ops.port), serverName: "parley-ops"),
                                         eventLoopGroupProvider: .shared(network), logger: logger))
        }
        // SIGINT stops at once; SIGTERM (a service manager, Kubernetes) drains first (`stopAfterDraining`).
        let services = ServiceGroup(configuration: .init(
            services: background + listeners.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: [.sigint], logger: logger))
        let terms = stopAfterDraining(services)
        defer { terms.cancel() }
        try await services.run()
        // Client sockets outlive the HTTP server's tasks: tell them we are going (1001) before the loops stop.
        await edge.closeAll()
        let deadline = ContinuousClock.now + .seconds(1)
        while await edge.counts.connections > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        logger.info("node stopping", metadata: ["node": "\(config.id)"])
        edgeCluster.close()
        try await raft.stop().get()
        await webhooks.shutdown()
        await transport.shutdown()
        // Nothing of the edge's starts on Raft's loop after `edgeCluster.close()` (it schedules under the lock
        // `close` takes), so the loop stops now, not after a wait for late tasks.
        try await raftLoop.shutdownGracefully()
        try await network.shutdownGracefully()
    }

    /// Registers this node in the meta group and, if no placement table exists yet, installs the one every
    /// node computes from `--peers` (compare-and-set: only the first of the nodes succeeds). Retries until
    /// done or the node stops.
    private func joinMeta() async {
        let me = NodeRecord(id: config.id, peerAddress: "\(config.advertisedPeerAddress)",
                            httpAddress: "\(config.advertisedClientAddress)")
        var registered = false
        while !Task.isCancelled {
            do {
                if !registered {
                    if case .refused(_, let why) = try await raft.submitMeta(.registerNode(me)).get() {
                        logger.error("meta refused this node's registration", metadata: ["why": "\(why)"])
                        return
                    }
                    registered = true
                    logger.info("registered in the meta group")
                }
                guard let meta = try await raft.metaState().get() else { throw RouteError.peerRefused(0) }
                if meta.placementVersion > 0 || membershipFile != nil { return }
                let nodes = founders
                let table = (0..<config.shardCount).map { raft.shardMap.replicas(of: $0, nodes: nodes) }
                switch try await raft.submitMeta(.setPlacement(expectedVersion: 0, replicas: table)).get() {
                case .placement(let version):
                    logger.info("installed the placement table", metadata: ["version": "\(version)"])
                    return
                case .refused(let code, _) where code == MetaRefusal.versionConflict.rawValue:
                    return  // another node installed it first
                default:
                    break  // not every node has registered yet
                }
            } catch {
                // No meta leader yet: try again shortly.
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Warns when shard replicas here stay leaderless for five of the longest election timeouts, naming the
    /// peers this node cannot reach and why (a node that cannot elect is almost always one that cannot
    /// reach its peers).
    private func watchElections() async {
        let electionTimeout = Duration.milliseconds(2 * config.electionTicks * config.tickMillis)
        var watch = ElectionWatch(patience: electionTimeout * 5)
        var failureLogged = false
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            if let failure = raft.failure, !failureLogged {
                // The disk failed, or a committed entry cannot be read by this version: /healthz says so too.
                failureLogged = true
                logger.critical("this node stopped driving Raft", metadata: ["why": "\(failure)"])
            }
            guard let shards = try? await raft.status().get() else { continue }
            let leaderless = Set(shards.filter { $0.leader == 0 }.map(\.shard))
            switch watch.observe(leaderless: leaderless, hosted: shards.count, at: .now) {
            case .stuck(let count, let hosted, let duration)?:
                let links = await transport.linkStatus()
                let unreachable = links.filter { !$0.connected }.map { link in
                    "\(link.peer) (\(config.peers[link.peer].map { "\($0)" } ?? "?"): \(link.lastError ?? "not connected yet"))"
                }
                logger.warning("shard replicas cannot elect a leader", metadata: [
                    "leaderless": "\(count) of \(hosted)", "for": "\(Self.tenths(duration)) s",
                    "unreachablePeers": "\(unreachable.isEmpty ? "none: every peer link is up" : unreachable.joined(separator: "; "))",
                ])
            case .recovered(let after)?:
                logger.notice("every shard replica here has a leader again", metadata: ["after": "\(Self.tenths(after)) s"])
            case nil:
                break
            }
        }
    }

    public var shardCount: Int { config.shardCount }

    public func shard(ofRoom roomID: String) -> Int? {
        let local = AppScope.local(roomID)
        return local.isEmpty || local.utf8.count > 128 || roomID.utf8.count > 256 ? nil : raft.shardMap.shard(ofRoom: roomID)
    }

    public func placement(ofShard shard: Int) async throws -> ShardPlacementReport {
        let p = try await raft.placement(of: shard).get()
        return ShardPlacementReport(shard: p.shard, replicas: p.replicas, leader: p.leader)
    }

    /// The client loops' call-only links to each peer, summed for /status: the latest error of any of them.
    static func edgeLinks(_ links: [PeerTransport.LinkStatus]) -> [UInt64: NodeStatusReport.Peer.EdgeLinks] {
        Dictionary(grouping: links, by: \.peer).mapValues { mine in
            let latest = mine.filter { $0.lastError != nil }.min { ($0.secondsSinceLastError ?? .infinity) < ($1.secondsSinceLastError ?? .infinity) }
            return .init(links: mine.count, connected: mine.filter(\.connected).count,
                         connectFailures: mine.reduce(0) { $0 + $1.connectFailures }, lastError: latest?.lastError,
                         lastErrorSecondsAgo: latest?.secondsSinceLastError.map(rounded))
        }
    }

    public func statusReport(withDigests: Bool) async -> NodeStatusReport {
        let shards = (try? await raft.status().get()) ?? []
        let digests = withDigests ? ((try? await raft.stateDigests().get()) ?? [:]) : [:]
        let links = await transport.linkStatus()
        let edgeLinks = Self.edgeLinks(await transport.callLinkStatus())
        var edgeFigures: NodeStatusReport.Edge?
        if let edge = self.edge.withLockedValue({ $0 }) {
            let f = await edge.figures
            edgeFigures = .init(connections: f.connections, sessions: f.sessions, feeds: f.feeds,
                                fanoutEvents: f.fanoutEvents, fanoutDeliveries: f.fanoutDeliveries)
        }
        let moves = (try? await raft.movesInProgress().get()) ?? []
        // Never long behind a peer (a node without a meta replica fetches the state): the last copy after 0.5 s.
        let metaState = try? await raft.metaState(within: .milliseconds(500)).get()
        let metaLeader = try? await raft.metaLeader().get()
        let meta = metaState.flatMap { $0 }.map { m in
            NodeStatusReport.Meta(
                leader: metaLeader.flatMap { $0 }, placementVersion: m.placementVersion,
                nodes: m.nodes.keys.sorted().map { id in
                    let n = m.nodes[id]!
                    return .init(id: n.id, peerAddress: n.peerAddress, httpAddress: n.httpAddress, state: "\(n.state)")
                },
                apps: m.apps.count)
        }
        var toFill: Int?
        if !replicasFilled.withLockedValue({ $0 }), let m = metaState.flatMap({ $0 }), m.placementVersion > 0 {
            let voting = Set(shards.filter { $0.conf.voters.contains(config.id) }.map(\.shard))
            let placed = m.placement.indices.filter { m.placement[$0].contains(config.id) }
            let missing = placed.filter { !voting.contains($0) }.count
            // A node that just joined is in no placement yet: the planner gives it replicas within a round.
            if placed.isEmpty { toFill = 1 } else if missing == 0 { replicasFilled.withLockedValue { $0 = true } } else { toFill = missing }
        }
        var report = NodeStatusReport(
            node: config.id, version: ParleyNodeVersion.string, uptimeSeconds: Date().timeIntervalSince(started),
            httpAddress: "\(config.listen)", peerAddress: "\(config.peerListen)", peerEncrypted: config.peerTLS != nil,
            shardCount: config.shardCount,
            healthy: raft.failure == nil,
            peers: links.map { link in
                .init(id: link.peer, address: config.peers[link.peer].map { "\($0)" }
                          ?? metaState.flatMap { $0 }?.nodes[link.peer]?.peerAddress ?? "",
                      connected: link.connected, queuedBatches: link.queuedBatches, droppedBatches: link.droppedBatches,
                      connectFailures: link.connectFailures, lastError: link.lastError,
                      lastErrorSecondsAgo: link.secondsSinceLastError.map(Self.rounded),
                      lastConnectedSecondsAgo: link.secondsSinceConnected.map(Self.rounded), protocolVersion: link.peerVersion)
            },
            shards: shards.map { s in
                .init(shard: s.shard, role: "\(s.role)", term: s.term, leader: s.leader, commit: s.commit,
                      applied: s.applied, logSize: s.lastIndex >= s.firstIndex ? s.lastIndex - s.firstIndex + 1 : 0,
                      lastSnapshot: s.snapshotIndex, rooms: s.rooms, quiesced: s.isQuiesced,
                      digest: digests[s.shard].map { String($0, radix: 16) },
                      voters: s.conf.voters, learners: s.conf.learners, joint: s.conf.isJoint,
                      imPending: s.imPending, imUsers: s.imUsers, imTeams: s.imTeams)
            },
            meta: meta, edge: edgeFigures,
            moves: moves.map { m in
                .init(shard: m.shard, leader: config.id, target: m.target, voters: m.conf.voters,
                      learners: m.learners.map { .init(node: $0.node, match: $0.match, bySnapshot: $0.bySnapshot,
                                                       snapshotBytesSent: $0.snapshotBytesAcked,
                                                       snapshotBytes: $0.snapshotBytes) },
                      joint: m.conf.isJoint, commit: m.commit, step: m.step)
            })
        for i in report.peers.indices { report.peers[i].edgeLinks = edgeLinks[report.peers[i].id] }
        report.replicasToFill = toFill
        report.peerProtocol = PeerProtocol.version
        report.clientEncrypted = config.clientTLS != nil
        report.raftLoops = raft.drivers.count
        report.allocator = MemoryAllocator.inUse
        let webhookFigures = webhooks.figures.report
        report.webhooks = webhookFigures.isEmpty ? nil : webhookFigures
        report.activity = activity.all
        report.memory = .init(
            raftLogBytes: shards.reduce(0) { $0 + $1.logBytes }, raftLogBoundBytes: config.memory.raftLogBytes,
            feedBytes: shards.reduce(0) { $0 + $1.feedBytes }, feedBoundBytesPerShard: config.memory.feedBytesPerShard,
            historyWindowBytes: shards.reduce(0) { $0 + $1.windowBytes },
            historyWindowBoundBytesPerShard: config.memory.historyWindowBytes,
            shardsWithWindowBound: shards.filter { $0.windowBound == config.memory.historyWindowBytes }.count,
            rssBytes: ResidentMemory.bytes())
        report.memory?.imLogWindowBytes = shards.reduce(0) { $0 + $1.imLogBytes }
        report.memory?.imLogWindowBoundBytesPerShard = config.memory.imLogWindowBytes
        report.memory?.shardsWithImLogWindowBound = shards.filter { $0.imLogBound == config.memory.imLogWindowBytes }.count
        return report
    }
}

extension NodeRuntime {
    /// Seconds to the millisecond, so /status does not print 17 digits.
    static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

    /// A duration as seconds with one decimal, for log lines.
    static func tenths(_ d: Duration) -> String {
        let tenths = d.components.seconds * 10 + d.components.attoseconds / 100_000_000_000_000_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}

public enum ParleyNodeVersion {
    public static let string = "0.1.0"
}

/// Late-bound pointer from the transport's callbacks to the raft.
private final class DriverReference: @unchecked Sendable {
    // Written once during start-up, before any peer can reach the transport's callbacks with data.
    var raft: RaftLoops?
    /// This node's `/status` as JSON, for `/rpc/v1/status`.
    var status: (@Sendable () async -> [UInt8])?
}
