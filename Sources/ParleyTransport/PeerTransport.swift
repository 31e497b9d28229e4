import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import ParleyRaft
import ParleyRaftWire

/// Node-to-node HTTP/2 (cleartext with prior knowledge, or mutual TLS with ALPN `h2` when `Config.tls` is
/// set): a server for peers' streams and one `PeerLink` per peer. Raft messages of all groups go to a peer as one batch per ready cycle on its long-lived stream;
/// RPCs (forwarded commands, reads) use short streams on the same connection.
public final class PeerTransport: Sendable {
    public struct Config: Sendable {
        public var nodeID: NodeID
        public var host: String
        /// 0 picks a free port (tests); `port` after `start()` says which.
        public var port: Int
        public var secret: String
        /// Largest Raft batch frame or RPC body accepted or sent.
        public var maxFrameBytes: Int = 64 << 20
        /// Raft bytes queued per unreachable peer before the oldest batches are dropped.
        public var queueLimitBytes: Int = 32 << 20
        /// TLS for the peer port (server and links alike); nil = cleartext h2.
        public var tls: PeerTLS?
        /// A connection that opens no authenticated stream within this is closed (SPEC A9).
        public var authDeadline: TimeAmount = .seconds(5)

        public init(nodeID: NodeID, host: String = "127.0.0.1", port: Int, secret: String) {
            self.nodeID = nodeID
            self.host = host
            self.port = port
            self.secret = secret
        }
    }

    static let connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration = {
        var c = NIOHTTP2Handler.ConnectionConfiguration()
        c.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
            HTTP2Setting(parameter: .initialWindowSize, value: 8 << 20),
            HTTP2Setting(parameter: .maxFrameSize, value: 1 << 20),
            // A peer's header block is a few short headers: 16 KiB in all, in at most 5 CONTINUATION frames
            // (SPEC A9). Past either, NIO answers GOAWAY and `PeerConnectionGuard` closes the connection.
            HTTP2Setting(parameter: .maxHeaderListSize, value: PeerTransport.maxHeaderListBytes),
        ]
        c.maximumSequentialContinuationFrames = 5
        return c
    }()

    static let maxHeaderListBytes = 16 << 10

    static let streamConfiguration: NIOHTTP2Handler.StreamConfiguration = {
        var c = NIOHTTP2Handler.StreamConfiguration()
        c.targetWindowSize = 8 << 20
        return c
    }()

    public let config: Config
    private let group: EventLoopGroup
    private let auth: PeerAuth
    private let server: Channel
    private let links: NIOLockedValueBox<[NodeID: PeerLink]> = NIOLockedValueBox([:])
    /// Links that carry calls only, one per peer and caller's event loop (an edge loop that sends a
    /// command straight to its shard's leader, issue 35), made at the first call; and the peers' addresses
    /// they are made with.
    private let callLinks: NIOLockedValueBox<(byLoop: [CallLinkKey: PeerLink], addresses: [NodeID: (host: String, port: Int)])>
        = NIOLockedValueBox(([:], [:]))

    private struct CallLinkKey: Hashable {
        var peer: NodeID
        var loop: ObjectIdentifier
    }
    private let onPeerDown: @Sendable (NodeID) -> Void
    private let onPeerUp: @Sendable (NodeID) -> Void
    private let answers = PendingAnswers()
    private let metrics: any MetricsFactory
    private let logger: Logger
    /// The links' TLS context (nil: cleartext).
    private let clientTLS: NIOSSLContext?

    /// The port the server listens on.
    public var port: Int { server.localAddress?.port ?? config.port }

    /// Binds the server; `onRaft` receives each decoded batch with its sender, `onRequest` answers RPCs.
    /// Dropped batches are counted per peer through `metrics`.
    public init(config: Config, group: EventLoopGroup,
                onRaft: @escaping @Sendable (NodeID, [RaftEnvelope]) -> Void,
                onRequest: @escaping @Sendable (PeerRequest, EventLoop) -> EventLoopFuture<PeerResponse>,
                onPeerDown: @escaping @Sendable (NodeID) -> Void = { _ in },
                onPeerUp: @escaping @Sendable (NodeID) -> Void = { _ in },
                metrics: any MetricsFactory = NOOPMetricsHandler.instance,
                logger: Logger = Logger(label: "parley.transport")) async throws {
        self.config = config
        self.metrics = metrics
        self.logger = logger
        self.onPeerDown = onPeerDown
        self.onPeerUp = onPeerUp
        self.group = group
        auth = PeerAuth(secret: config.secret)
        let refusals = PeerRefusalLog(logger: logger, metrics: metrics)
        var settings = PeerStreamHandler.Settings(auth: PeerTokenCheck(auth: auth, nodeID: config.nodeID),
                                                  maxFrameBytes: config.maxFrameBytes,
                                                  onRaft: onRaft, onRequest: onRequest, answers: answers)
        settings.onRefused = { why, remote in refusals.refused(why, from: remote) }
        let versionRefusals = RateLimitedWarning(logger: logger, message: "refused a peer of a peer protocol version this node does not talk to")
        settings.onVersionRefused = { peer, version in
            versionRefusals.happened(["peer": "\(peer)", "theirs": "\(version)",
                                      "ours": "\(PeerProtocol.oldestAccepted)...\(PeerProtocol.version)"])
        }
        let tls = try config.tls?.contexts()
        clientTLS = tls?.client
        server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)  // TCP level: see PeerLink.connectIfNeeded
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.server)) }
                    let guardian = PeerConnectionGuard(authDeadline: config.authDeadline)
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: Self.connectionConfiguration,
                        streamConfiguration: Self.streamConfiguration) { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandler(PeerStreamHandler(settings: settings,
                                                                                                connection: guardian))
                            }
                        }
                    try channel.pipeline.syncOperations.addHandler(guardian)
                }
            }
            .bind(host: config.host, port: config.port).get()
    }

    /// Sets the peers and their addresses; links to peers no longer listed are closed.
    public func setPeers(_ peers: [NodeID: (host: String, port: Int)]) async {
        let removedCallLinks: [PeerLink] = callLinks.withLockedValue { state in
            state.addresses = peers.filter { $0.key != config.nodeID }
            for (key, link) in state.byLoop {
                if let address = peers[key.peer] { link.update(host: address.host, port: address.port) }
            }
            let gone = state.byLoop.keys.filter { peers[$0.peer] == nil }
            return gone.compactMap { state.byLoop.removeValue(forKey: $0) }
        }
        for link in removedCallLinks { try? await link.close().get() }
        let removed: [PeerLink] = links.withLockedValue { links in
            for (id, address) in peers where id != config.nodeID {
                if let link = links[id] {
                    link.update(host: address.host, port: address.port)
                } else {
                    var settings = linkSettings(for: id)
                    settings.onDown = onPeerDown
                    settings.onUp = onPeerUp
                    let link = PeerLink(peer: id, host: address.host, port: address.port, loop: group.next(),
                                        settings: settings)
                    links[id] = link
                    link.start()
                }
            }
            let gone = links.keys.filter { peers[$0] == nil }
            return gone.compactMap { links.removeValue(forKey: $0) }
        }
        for link in removed { try? await link.close().get() }
    }

    private func linkSettings(for peer: NodeID) -> PeerLink.Settings {
        PeerLink.Settings(nodeID: config.nodeID, auth: auth, tls: clientTLS, queueLimitBytes: config.queueLimitBytes,
                          maxFrameBytes: config.maxFrameBytes,
                          droppedMetric: Counter(label: Self.droppedMetric, dimensions: [("peer", "\(peer)")],
                                                 factory: metrics),
                          failureMetric: Counter(label: Self.connectFailuresMetric, dimensions: [("peer", "\(peer)")],
                                                 factory: metrics),
                          gaveWayMetric: Counter(label: Self.callsGaveWayMetric, dimensions: [("peer", "\(peer)")],
                                                 factory: metrics),
                          logger: logger)
    }

    public static let droppedMetric = "parley_transport_dropped_batches_total"
    public static let connectFailuresMetric = "parley_transport_connect_failures_total"
    public static let callsGaveWayMetric = "parley_transport_calls_gave_way_total"

    /// Writes the RPC answers completed so far on `loop` now, rather than after the task running there
    /// (the ready loop calls it once a cycle has its answers, before the cycle's sync). Call on `loop`.
    public func flushAnswers(on loop: EventLoop) {
        answers.flush(on: loop)
    }

    /// Sends one Raft batch to a peer (queued while it is unreachable).
    public func send(to peer: NodeID, _ batch: [RaftEnvelope]) {
        links.withLockedValue { $0[peer] }?.send(batch)
    }

    /// Calls `path` (under `/rpc/v1/`) on a peer.
    /// `timeout` nil: `PeerLink.callTimeout`. `givesWay`: asked once the link has heard nothing from the peer
    /// for `PeerLink.silentAfter` (a paused or cut-off peer); true ends the call with an error at once, as a
    /// lost link does (`PeerLink.call`).
    public func call(_ peer: NodeID, path: String, body: [UInt8], timeout: TimeAmount? = nil,
                     givesWay: (@Sendable () -> Bool)? = nil) -> EventLoopFuture<PeerResponse> {
        guard let link = links.withLockedValue({ $0[peer] }) else {
            return group.next().makeFailedFuture(PeerLinkError.unavailable(peer))
        }
        return link.call(path: path, body: body, timeout: timeout ?? PeerLink.callTimeout, givesWay: givesWay)
    }

    /// Calls `path` on a peer over a link of `loop`'s own, answered on `loop`: an edge loop that sends a
    /// command straight to its shard's leader does not pass through the Raft loop on its way out or back
    /// (issue 35). The link is made at the first call and carries calls only.
    public func call(_ peer: NodeID, path: String, body: [UInt8], timeout: TimeAmount? = nil, on loop: EventLoop,
                     givesWay: (@Sendable () -> Bool)? = nil) -> EventLoopFuture<PeerResponse> {
        let key = CallLinkKey(peer: peer, loop: ObjectIdentifier(loop))
        let link: PeerLink? = callLinks.withLockedValue { state in
            if let link = state.byLoop[key] { return link }
            guard let address = state.addresses[peer] else { return nil }
            var settings = linkSettings(for: peer)
            settings.carriesRaft = false
            let link = PeerLink(peer: peer, host: address.host, port: address.port, loop: loop, settings: settings)
            state.byLoop[key] = link
            return link
        }
        guard let link else { return loop.makeFailedFuture(PeerLinkError.unavailable(peer)) }
        return link.call(path: path, body: body, timeout: timeout ?? PeerLink.callTimeout, givesWay: givesWay)
    }

    /// Per-peer link health for /status.
    public struct LinkStatus: Sendable, Hashable {
        public var peer: NodeID
        /// Connected with the Raft stream accepted by the peer.
        public var connected: Bool
        public var queuedBatches: Int
        public var droppedBatches: Int
        /// Failed connection attempts and refused streams since the node started.
        public var connectFailures: Int
        /// The last reason the link failed or dropped (nil if it never did).
        public var lastError: String?
        public var secondsSinceLastError: Double?
        /// 0 while connected; nil if this link never connected.
        public var secondsSinceConnected: Double?
        /// The peer protocol version the peer last answered with (`PeerProtocol`; nil: never connected).
        public var peerVersion: Int?
    }

    /// Whether every one of `nodes` (this node aside) last answered with a peer protocol version that has
    /// `feature`; a node never reached counts as one that does not.
    public func everyPeerHas(_ feature: PeerProtocol.Feature, among nodes: some Sequence<NodeID>) async -> Bool {
        guard PeerProtocol.version >= feature.version else { return false }
        let versions = Dictionary(await linkStatus().map { ($0.peer, $0.peerVersion ?? 0) }, uniquingKeysWith: max)
        return nodes.allSatisfy { $0 == config.nodeID || (versions[$0] ?? 0) >= feature.version }
    }

    public func linkStatus() async -> [LinkStatus] {
        await Self.status(of: links.withLockedValue { Array($0.values) })
    }

    /// The call-only links of the client loops (`call(…on:)`), each with the peer it reaches (for /status:
    /// commands go straight to a shard's leader over them, and a peer whose links are down takes the driver's
    /// route instead, seen only as `parley_edge_commands_to_leader_total{result="rerouted"}` otherwise).
    public func callLinkStatus() async -> [LinkStatus] {
        await Self.status(of: callLinks.withLockedValue { Array($0.byLoop.values) })
    }

    /// Each link's status, asked on its loop, by peer.
    private static func status(of links: [PeerLink]) async -> [LinkStatus] {
        var out: [LinkStatus] = []
        for link in links.sorted(by: { $0.peer < $1.peer }) {
            if let status = try? await link.status().get() { out.append(status) }
        }
        return out
    }

    public func shutdown() async {
        var all = links.withLockedValue { links in
            defer { links.removeAll() }
            return Array(links.values)
        }
        all += callLinks.withLockedValue { state in
            defer { state.byLoop.removeAll() }
            return Array(state.byLoop.values)
        }
        for link in all { try? await link.close().get() }
        try? await server.close().get()
    }
}
