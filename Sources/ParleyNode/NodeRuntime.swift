import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ParleyAPI
import ParleyCluster
import ParleyRaft
import ParleyRooms
import ParleyStorage
import ServiceLifecycle

/// One running node: its database, the peer transport, the Raft driver with every shard replica placed
/// here, and the HTTP port with `/status`. `run()` serves until a graceful shutdown (SIGTERM / SIGINT).
public final class NodeRuntime: Service, StatusSource, @unchecked Sendable {
    public let config: NodeConfig
    public let logger: Logger
    private let started = Date()
    private let network: MultiThreadedEventLoopGroup
    private let raftLoop: MultiThreadedEventLoopGroup
    public let transport: PeerTransport
    public let driver: RaftDriver

    /// Opens the database, binds the peer port and builds every replica; nothing ticks until `run()`.
    public init(config: NodeConfig, logger: Logger) async throws {
        try config.validate()
        self.config = config
        self.logger = logger
        try FileManager.default.createDirectory(atPath: config.dataDirectory, withIntermediateDirectories: true)
        let database = try NodeDatabase(path: config.dataDirectory + "/node.sqlite", durable: config.durable)
        network = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        raftLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // The transport and the driver call each other; the reference is set once both exist.
        let ref = DriverReference()
        var peerConfig = PeerTransport.Config(nodeID: config.id, host: config.peerListen.host,
                                              port: config.peerListen.port, secret: config.secret)
        peerConfig.maxFrameBytes = 64 << 20
        transport = try await PeerTransport(
            config: peerConfig, group: network,
            onRaft: { from, batch in ref.driver?.receive(from: from, batch) },
            onRequest: { request, loop in
                ref.driver?.handle(request) ?? loop.makeSucceededFuture(PeerResponse(status: 503, body: []))
            },
            onPeerDown: { peer in ref.driver?.peerUnreachable(peer) })
        var peers: [NodeID: (host: String, port: Int)] = [:]
        for (id, address) in config.peers where id != config.id { peers[id] = (address.host, address.port) }
        await transport.setPeers(peers)

        var raft = RaftConfig(id: config.id, electionTick: config.electionTicks, heartbeatTick: 1,
                              quiesceAfterTicks: config.quiesceAfterTicks)
        raft.maxInflightBytes = 32 << 20
        let hostConfig = RaftHost.Config(
            nodeID: config.id, nodes: config.peers.keys.sorted(),
            shardMap: ShardMap(shardCount: config.shardCount, replicationFactor: config.replicationFactor),
            raft: raft, boot: UInt64(Date().timeIntervalSince1970 * 1000))
        let transport = self.transport
        driver = try RaftDriver(loop: raftLoop.next(), transport: transport,
                                tickInterval: .milliseconds(Int64(config.tickMillis))) { send, publish in
            try RaftHost(config: hostConfig, database: database, send: send, publish: publish)
        }
        ref.driver = driver
    }

    /// Serves the HTTP port and drives Raft until asked to stop.
    public func run() async throws {
        driver.start()
        let hosted = try await driver.status().get().count
        logger.info("node started", metadata: [
            "node": "\(config.id)", "http": "\(config.listen)", "peer": "\(config.peerListen)", "shards": "\(hosted)",
        ])
        let router = Router()
        StatusRoutes.add(to: router, source: self)
        let app = Application(router: router,
                              configuration: .init(address: .hostname(config.listen.host, port: config.listen.port),
                                                   serverName: "parley"),
                              eventLoopGroupProvider: .shared(network), logger: logger)
        // SIGTERM / SIGINT end the HTTP server gracefully; then Raft and the transport stop.
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint],
                                                         logger: logger))
        try await services.run()
        logger.info("node stopping", metadata: ["node": "\(config.id)"])
        try await driver.stop().get()
        await transport.shutdown()
        try await raftLoop.shutdownGracefully()
        try await network.shutdownGracefully()
    }

    public var shardCount: Int { config.shardCount }

    public func shard(ofRoom roomID: String) -> Int? {
        roomID.isEmpty || roomID.utf8.count > 128 ? nil : driver.shardMap.shard(ofRoom: roomID)
    }

    public func placement(ofShard shard: Int) async throws -> ShardPlacementReport {
        let p = try await driver.placement(of: shard).get()
        return ShardPlacementReport(shard: p.shard, replicas: p.replicas, leader: p.leader)
    }

    public func statusReport(withDigests: Bool) async -> NodeStatusReport {
        let shards = (try? await driver.status().get()) ?? []
        let digests = withDigests ? ((try? await driver.stateDigests().get()) ?? [:]) : [:]
        let links = await transport.linkStatus()
        return NodeStatusReport(
            node: config.id, version: ParleyNodeVersion.string, uptimeSeconds: Date().timeIntervalSince(started),
            httpAddress: "\(config.listen)", peerAddress: "\(config.peerListen)", shardCount: config.shardCount,
            healthy: driver.failure == nil,
            peers: links.map { link in
                .init(id: link.peer, address: config.peers[link.peer].map { "\($0)" } ?? "",
                      connected: link.connected, queuedBatches: link.queuedBatches, droppedBatches: link.droppedBatches)
            },
            shards: shards.map { s in
                .init(shard: s.shard, role: "\(s.role)", term: s.term, leader: s.leader, commit: s.commit,
                      applied: s.applied, logSize: s.lastIndex >= s.firstIndex ? s.lastIndex - s.firstIndex + 1 : 0,
                      lastSnapshot: s.snapshotIndex, rooms: s.rooms, quiesced: s.isQuiesced,
                      digest: digests[s.shard].map { String($0, radix: 16) })
            })
    }
}

public enum ParleyNodeVersion {
    public static let string = "0.1.0"
}

/// Late-bound pointer from the transport's callbacks to the driver.
private final class DriverReference: @unchecked Sendable {
    // Written once during start-up, before any peer can reach the transport's callbacks with data.
    var driver: RaftDriver?
}
