import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOSSL
import NIOWebSocket
import ParleyCluster

/// The node's HTTP port: plain HTTP/1.1 requests go to the application's router (Hummingbird); an upgrade to
/// `/ws` (and `/ws/echo` when `EdgeSettings.servesEcho` is on) becomes a `ClientSocketHandler` on the
/// connection's pipeline.
///
/// Modelled on HummingbirdWebSocket's `HTTP1WebSocketUpgradeChannel`, with one difference that is the reason
/// this type exists: after the upgrade no task and no async channel stay with the connection — Hummingbird's
/// per-connection task returns at once and the socket lives on as NIO handlers, so an idle client costs only
/// its channel (docs/benchmarks.md, idle connections).
///
///     let app = Application(router: router, server: EdgeHTTPChannel.server(edge: edge), configuration: …)
public struct EdgeHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    /// Frames larger than this are refused by the WebSocket layer itself (close 1009 without an answer);
    /// messages between `EdgeSettings.maxFrameBytes` and this get the protocol's 4005 answer first.
    public static let transportFrameLimit = 1 << 20

    enum UpgradeResult: Sendable {
        case webSocket
        case notUpgraded(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case failedUpgrade(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
    }

    public struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        public let channel: any Channel
    }

    public let responder: HTTPChannelHandler.Responder
    let edge: Edge
    /// T1: set, every connection starts with a TLS handshake (HTTPS and WSS on the same port).
    let tls: ClientTLS?

    /// The server builder for `Application(router:server:…)`.
    public static func server(edge: Edge, tls: ClientTLS? = nil) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in EdgeHTTPChannel(responder: responder, edge: edge, tls: tls) }
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let edge = self.edge
        let tls = self.tls
        let headDeadline = TimeAmount.milliseconds(Int64(edge.settings.requestHeadMillis))
        // A2: over the node's cap or its source's share (an IPv4 address, an IPv6 /64), the connection gets 503
        // and nothing else.
        let source = ConnectionGate.source(of: channel.remoteAddress)
        if let refusal = edge.gate.admit(source) {
            edge.metrics?.connectionsRefused.increment()
            edge.refusedConnections.happened(["source": "\(source)", "why": "\(refusal.rawValue)", "open": "\(edge.gate.open)"])
            return channel.eventLoop.makeCompletedFuture {
                // Under TLS the 503 goes out once the handshake is done (a bounded wait: the refusal's deadline).
                if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.context())) }
                try channel.pipeline.syncOperations.addHandler(OverCapRefusal(deadline: headDeadline))
                return Value(upgradeResult: channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel), channel: channel)
            }
        }
        channel.closeFuture.whenComplete { _ in edge.gate.release(source) }
        return channel.eventLoop.makeCompletedFuture {
            let upgradeAttempted = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
                maxFrameSize: max(Self.transportFrameLimit, edge.settings.maxFrameBytes),
                shouldUpgrade: { channel, head in
                    upgradeAttempted.value = true
                    let served = Self.socketMode(path: head.uri, edge: edge) != nil
                    return channel.eventLoop.makeSucceededFuture(served ? HTTPHeaders() : nil)
                },
                upgradePipelineHandler: { channel, head in
                    channel.eventLoop.makeCompletedFuture {
                        guard let mode = Self.socketMode(path: head.uri, edge: edge) else {
                            throw NIOWebSocketUpgradeError.unsupportedWebSocketTarget
                        }
                        try Self.installSocket(on: channel, mode: mode, settings: edge.settings)
                        return UpgradeResult.webSocket
                    }
                })
            let serverUpgrade = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: tls != nil))
                        try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(logger: logger))
                        try channel.pipeline.syncOperations.addHandler(ClosingAnswer())
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        return upgradeAttempted.value ? .failedUpgrade(asyncChannel) : .notUpgraded(asyncChannel)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(upgradeConfiguration: serverUpgrade)
            configuration.enablePipelining = false  // HTTP is pipelined by NIOAsyncChannel
            configuration.enableErrorHandling = false  // handled by Hummingbird
            configuration.enableResponseHeaderValidation = false  // HTTPTypes validates already
            let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(MalformedRequestAnswer(), name: MalformedRequestAnswer.name,
                                                           position: .after(decoder))
            try channel.pipeline.syncOperations.addHandler(
                RequestHeadDeadline(first: headDeadline, between: .milliseconds(Int64(edge.settings.keepAliveMillis))),
                name: RequestHeadDeadline.name, position: .first)
            // In front of everything: the head deadline, armed when the connection opened, then also bounds the
            // handshake (a ClientHello dripped a byte at a time is closed like a dripped request head).
            if let tls {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.context()), position: .first)
            }
            return Value(upgradeResult: negotiated, channel: channel)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgradeResult.get() {
            case .webSocket:
                return  // the connection lives on in its handlers
            case .notUpgraded(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .failedUpgrade(let http):
                try await http.executeThenClose { _, outbound in
                    let head = HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])
                    try await outbound.write(contentsOf: [.head(head), .end(nil)])
                }
            }
        } catch {
            logger.debug("connection ended during the upgrade", metadata: ["error": "\(error)"])
        }
    }

    /// Which socket a WebSocket path gets (nil: no WebSocket there).
    static func socketMode(path uri: String, edge: Edge) -> ClientSocketHandler.Mode? {
        let path = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
        switch path {
        case "/ws": return .chat(edge)
        case "/ws/echo" where edge.settings.servesEcho: return .echo
        default: return nil
        }
    }

    /// The pipeline after the upgrade (the upgrader already added the frame codec and its protocol error
    /// handler): the frame deadline ahead of the decoder, then the socket handler (which keeps the idle timeout). The write
    /// buffer's high water mark is half what a connection may have unsent before it counts as too slow (1008, D2).
    static func installSocket(on channel: any Channel, mode: ClientSocketHandler.Mode, settings: EdgeSettings) throws {
        if let deadline = try? channel.pipeline.syncOperations.handler(type: RequestHeadDeadline.self) {
            channel.pipeline.syncOperations.removeHandler(deadline, promise: nil)
        }
        if let answer = try? channel.pipeline.syncOperations.handler(type: MalformedRequestAnswer.self) {
            channel.pipeline.syncOperations.removeHandler(answer, promise: nil)
        }
        // D2: past half the bound a connection is behind (low-priority events skipped); below a quarter it is
        // told what it skipped.
        let unsentBound = max(settings.maxQueuedBytes, 2048)
        try channel.syncOptions?.setOption(ChannelOptions.writeBufferWaterMark,
                                           value: .init(low: unsentBound / 4, high: unsentBound / 2))
        let idle = TimeAmount.milliseconds(Int64(settings.idleTimeoutMillis))
        let maxMessage: Int
        switch mode {
        case .chat: maxMessage = settings.maxFrameBytes
        case .echo: maxMessage = max(transportFrameLimit, settings.maxFrameBytes)
        }
        let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<WebSocketFrameDecoder>.self)
        let metrics: EdgeMetrics?
        if case .chat(let edge) = mode { metrics = edge.metrics } else { metrics = nil }
        let frameDeadline = FrameDeadline(limit: .milliseconds(Int64(settings.frameMillis)),
                                          expired: { metrics?.closed("frameTooSlow") })
        try channel.pipeline.syncOperations.addHandler(frameDeadline, position: .before(decoder))
        // Whole frames framed once for many connections (`TextFrame`) are written in past the frame encoder.
        let passage = FrameBytesPassage()
        let encoder = try channel.pipeline.syncOperations.handler(type: WebSocketFrameEncoder.self)
        try channel.pipeline.syncOperations.addHandler(passage, position: .before(encoder))
        try channel.pipeline.syncOperations.addHandler(
            ClientSocketHandler(mode: mode, maxMessageBytes: maxMessage, preHelloMessageBytes: settings.preHelloMessageBytes,
                                fragmentedMessageBytes: settings.fragmentedMessageBytes,
                                messageDeadline: .milliseconds(Int64(settings.messageMillis)),
                                helloDeadline: .milliseconds(Int64(settings.helloDeadlineMillis)), idleTimeout: idle,
                                unsentBound: unsentBound, passage: passage, frameDeadline: frameDeadline))
    }
}

/// A2: what a connection over the caps gets once it is active: 503 with `Retry-After`, then the close (at
/// the latest after `deadline`, for a TLS client that never finishes its handshake).
final class OverCapRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private var done = false
    private let deadline: TimeAmount

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    private func refuse(_ context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        let closing = context.channel
        context.eventLoop.scheduleTask(in: deadline) { closing.close(promise: nil) }
        let text = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        let channel = context.channel
        context.writeAndFlush(NIOAny(ByteBuffer(string: text))).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // nothing it sends is read
}

