import NIOCore
import NIOHPACK
import NIOHTTP2
import ParleyRaft
import ParleyRaftWire

/// What a peer can ask of this node over an RPC stream: a path under `/rpc/v1/` and a body.
public struct PeerRequest: Sendable {
    public var from: NodeID
    public var path: String
    public var body: [UInt8]
    /// The peer protocol version the caller's stream said it speaks (an answer may use what it reads: issue 34's
    /// compact command answers from 7 on).
    public var version: Int = PeerProtocol.version
    /// The first join call of a stream opened with a join credential (made for any node, so only the node
    /// that saw it first remembers its nonce): its nonce and time, for the member to claim cluster-wide.
    public var joinCredential: JoinCredential? = nil
}

/// The nonce and time of the credential a join-only stream opened with (issue 33).
public struct JoinCredential: Sendable, Hashable {
    public var nonce: String
    public var time: Int64
}

/// A peer's answer: an HTTP status and a body.
public struct PeerResponse: Sendable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }

    /// An answer whose body is a sentence for the operator (the cluster tool prints it).
    public static func text(_ status: Int, _ text: String) -> PeerResponse { PeerResponse(status: status, body: Array(text.utf8)) }
}

/// The server side of one HTTP/2 stream from a peer. Three kinds of stream:
/// - `POST /raft/v1/stream`: long-lived; carries length-prefixed Raft batches until the peer closes it;
/// - `POST /rpc/v1/stream`: long-lived; carries many RPCs as frames `[u32 length][u64 id][path][body]`
///   and answers each with `[u32 length][u64 id][u16 status][body]`, in whatever order they complete;
/// - `POST /rpc/v1/…`: one request, one response (external tools; nodes use the stream above);
/// - `GET /health`: unauthenticated liveness for probes and external HTTP/2 clients.
/// Every other path, a bad token, an oversized frame or undecodable bytes end the stream with a status.
final class PeerStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    struct Settings: Sendable {
        var auth: PeerTokenCheck
        /// Told of every refused credential (for a rate-limited log line and a metric).
        var onRefused: @Sendable (PeerTokenCheck.Refusal, SocketAddress?) -> Void = { _, _ in }
        /// Told of a stream refused for its peer protocol version (node, the version it named).
        var onVersionRefused: @Sendable (NodeID, String) -> Void = { _, _ in }
        var maxFrameBytes: Int
        var onRaft: @Sendable (NodeID, [RaftEnvelope]) -> Void
        var onRequest: @Sendable (PeerRequest, EventLoop) -> EventLoopFuture<PeerResponse>
        var answers: PendingAnswers
    }

    /// `joinOnly`: an RPC stream opened with a token for `PeerTokenCheck.anyNode` (a node joining by address):
    /// it may make the join call and nothing else, and does not count as an authenticated stream of its
    /// connection (`PeerConnectionGuard`).
    private enum Mode { case awaitingHeaders, raft(NodeID), rpcStream(NodeID, joinOnly: Bool), rpc(NodeID, String), finished }
    /// A join-only stream's credential, until a join call made with it was answered (then the stream has
    /// proved itself once, and its later calls — a tool reading the registry again — claim nothing).
    private var unclaimedJoin: JoinCredential?

    /// The one call a join-only stream may make.
    static let joinPath = PeerProtocol.joinPath

    private let settings: Settings
    /// The connection this stream belongs to, told when the stream authenticates.
    private let connection: PeerConnectionGuard?
    private var mode = Mode.awaitingHeaders
    /// The version the stream's headers named (checked in `route`; no stream gets past it without one).
    private var peerVersion = PeerProtocol.oldestAccepted
    private var buffer = ByteBuffer()

    init(settings: Settings, connection: PeerConnectionGuard? = nil) {
        self.settings = settings
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let h):
            guard case .awaitingHeaders = mode else { return finish(context, status: 400, "unexpected headers") }
            route(context, h.headers, endStream: h.endStream)
        case .data(let d):
            guard case .byteBuffer(var bytes) = d.data else { return }
            switch mode {
            case .raft(let from):
                buffer.writeBuffer(&bytes)
                drainRaftFrames(context, from: from)
            case .rpcStream(let from, let joinOnly):
                buffer.writeBuffer(&bytes)
                drainCallFrames(context, from: from, joinOnly: joinOnly)
            case .rpc(let from, let path):
                buffer.writeBuffer(&bytes)
                guard buffer.readableBytes <= settings.maxFrameBytes else {
                    return finish(context, status: 413, "request over \(settings.maxFrameBytes) bytes")
                }
                if d.endStream {
                    answer(context, PeerRequest(from: from, path: path, body: Array(buffer: buffer), version: peerVersion))
                }
            case .awaitingHeaders, .finished:
                return
            }
        default:
            return
        }
    }

    private func route(_ context: ChannelHandlerContext, _ headers: HPACKHeaders, endStream: Bool) {
        let path = headers.first(name: ":path") ?? ""
        if path == "/health" {
            return finish(context, status: 200, "ok")
        }
        let node: NodeID
        var joinOnly = false
        switch settings.auth.check(path: path, header: { headers.first(name: $0) }) {
        case .success(let from):
            node = from
            connection?.authenticatedStream()
        case .failure(let why):
            if path == "/rpc/v1/stream",
               case .success(let from) = settings.auth.check(path: path, anyNode: true, header: { headers.first(name: $0) }) {
                // A join credential is made for any node, so its nonce is remembered only by the node that saw
                // it first: it opens the join call and nothing more, and the connection keeps the bounds of an
                // unauthenticated one (closed on an error, and at the authentication deadline) — issue 33.
                node = from
                joinOnly = true
                unclaimedJoin = JoinCredential(nonce: headers.first(name: "x-parley-nonce") ?? "",
                                               time: headers.first(name: "x-parley-time").flatMap(Int64.init) ?? 0)
            } else {
                settings.onRefused(why, context.channel.parent?.remoteAddress)
                return finish(context, status: 401, "cluster credentials refused: \(why.rawValue)")
            }
        }
        // Issue 18: a peer of a version this node cannot talk to is refused before anything it sends is read.
        let version = PeerProtocol.version(fromHeader: headers.first(name: PeerProtocol.header))
        guard let version, version >= PeerProtocol.oldestAccepted else {
            let said = headers.first(name: PeerProtocol.header) ?? "?"
            settings.onVersionRefused(node, said)
            return finish(context, status: 426, "peer protocol version \(said) is not one this node talks to "
                          + "(\(PeerProtocol.oldestAccepted) to \(PeerProtocol.version)): upgrade one version at a time")
        }
        peerVersion = version
        if path == "/raft/v1/stream" || path == "/rpc/v1/stream" {
            mode = path == "/raft/v1/stream" ? .raft(node) : .rpcStream(node, joinOnly: joinOnly)
            // Accept at once: the peer keeps writing batches on this stream. Our version goes with the answer.
            let ok = HPACKHeaders([(":status", "200"), (PeerProtocol.header, "\(PeerProtocol.version)")])
            context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: ok))), promise: nil)
        } else if path.hasPrefix("/rpc/v1/") {
            mode = .rpc(node, path)
            if endStream { answer(context, PeerRequest(from: node, path: path, body: [], version: version)) }
        } else {
            finish(context, status: 404, "no such path")
        }
    }

    /// Hands each whole frame in the buffer to `handle`, which returns false once it has ended the stream.
    private func drainFrames(_ context: ChannelHandlerContext, _ handle: (inout ByteBuffer) -> Bool) {
        while true {
            switch buffer.readLengthPrefixedFrame(maxBytes: settings.maxFrameBytes) {
            case .incomplete:
                buffer.discardReadBytes()
                return
            case .oversized(let length):
                return finish(context, status: 413, "frame of \(length) bytes is over \(settings.maxFrameBytes)")
            case .frame(var frame):
                guard handle(&frame) else { return }
            }
        }
    }

    /// A Raft stream is a sequence of frames, each a `RaftWireCodec` batch.
    private func drainRaftFrames(_ context: ChannelHandlerContext, from: NodeID) {
        drainFrames(context) { frame in
            do {
                settings.onRaft(from, try RaftWireCodec.decode(Array(buffer: frame)))
                return true
            } catch {
                finish(context, status: 400, "undecodable Raft batch: \(error)")
                return false
            }
        }
    }

    /// Each frame of an RPC stream is one call; its answer goes back on the same stream with the call's id.
    private func drainCallFrames(_ context: ChannelHandlerContext, from: NodeID, joinOnly: Bool) {
        drainFrames(context) { frame in
            guard let id = frame.readInteger(as: UInt64.self), let pathLength = frame.readInteger(as: UInt16.self),
                  let path = frame.readString(length: Int(pathLength)) else {
                finish(context, status: 400, "malformed call frame")
                return false
            }
            if joinOnly && path != Self.joinPath {
                queueAnswer(context, id: id, PeerResponse(status: 403, body: Array("a token for any node opens only \(Self.joinPath)".utf8)))
                return true
            }
            var request = PeerRequest(from: from, path: path, body: Array(buffer: frame), version: peerVersion)
            if joinOnly { request.joinCredential = unclaimedJoin }
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            settings.onRequest(request, loop).hop(to: loop).whenComplete { result in
                let response: PeerResponse
                switch result {
                case .success(let r): response = r
                case .failure(let error): response = PeerResponse(status: 500, body: Array("\(error)".utf8))
                }
                let (handler, context) = bound.value
                if joinOnly && response.status == 200 { handler.unclaimedJoin = nil }
                handler.queueAnswer(context, id: id, response)
            }
            return true
        }
    }

    /// Answers that completed during this loop task leave together in one DATA frame (a Raft commit answers
    /// hundreds of forwarded commands at once), written when `PendingAnswers` says.
    private var answersOut: ByteBuffer?

    private func queueAnswer(_ context: ChannelHandlerContext, id: UInt64, _ response: PeerResponse) {
        if answersOut == nil {
            answersOut = ByteBuffer()
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            settings.answers.add(on: context.eventLoop) {
                let (handler, context) = bound.value
                guard let out = handler.answersOut else { return }
                handler.answersOut = nil
                context.writeAndFlush(handler.wrapOutboundOut(.data(.init(data: .byteBuffer(out)))), promise: nil)
            }
        }
        answersOut!.writeLengthPrefixedFrame { out in
            out.writeInteger(id)
            out.writeInteger(UInt16(clamping: response.status))
            out.writeBytes(response.body)
        }
    }

    private func answer(_ context: ChannelHandlerContext, _ request: PeerRequest) {
        mode = .finished
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        settings.onRequest(request, loop).hop(to: loop).whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .success(let response): handler.respond(context, status: response.status, body: response.body)
            case .failure(let error): handler.respond(context, status: 500, body: Array("\(error)".utf8))
            }
        }
    }

    private func finish(_ context: ChannelHandlerContext, status: Int, _ message: String) {
        if case .raft = mode { mode = .rpcStream(0, joinOnly: false) }
        if case .rpcStream = mode {
            // The stream was already accepted with a 200: a reset is the only way left to refuse it.
            mode = .finished
            context.close(promise: nil)
            return
        }
        mode = .finished
        respond(context, status: status, body: Array(message.utf8))
    }

    private func respond(_ context: ChannelHandlerContext, status: Int, body: [UInt8]) {
        let headers = HPACKHeaders([(":status", "\(status)"), ("content-length", "\(body.count)")])
        context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true))
        context.writeAndFlush(wrapOutboundOut(data), promise: nil)
    }
}
