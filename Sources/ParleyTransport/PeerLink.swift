import Logging
import Metrics
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ParleyRaft
import ParleyRaftWire

/// The connection from this node to one peer: one HTTP/2 connection (cleartext, prior knowledge) carrying
/// a long-lived Raft stream and any number of RPC streams. Connects as soon as it is made and stays connected,
/// so a peer's health shows whether or not this node has had anything to send it (a link used to connect
/// only when it first had something to send, and between two followers of the same leaders it never did).
/// Reconnects with backoff; while the peer is
/// unreachable, Raft batches wait in a bounded queue and the oldest are dropped first (Raft retransmits;
/// client data never travels on this queue).
///
/// All state lives on `loop`; public methods hop onto it, so the class is safe to share.
final class PeerLink: @unchecked Sendable {
    struct Settings: Sendable {
        var nodeID: NodeID
        var auth: PeerAuth
        /// Mutual TLS to the peer (nil: cleartext h2 with prior knowledge).
        var tls: NIOSSLContext?
        var queueLimitBytes: Int
        var maxFrameBytes: Int
        var backoff: (initial: TimeAmount, max: TimeAmount) = (.milliseconds(50), .seconds(2))
        /// Told when an established connection to the peer breaks.
        var onDown: @Sendable (NodeID) -> Void = { _ in }
        /// Told when the peer accepts this node's Raft stream on a new connection (it is reachable again).
        var onUp: @Sendable (NodeID) -> Void = { _ in }
        /// `parley_transport_dropped_batches_total{peer}`: counts what `dropped` counts, for /metrics.
        var droppedMetric: Counter
        /// `parley_transport_connect_failures_total{peer}`: failed connection attempts and refused streams.
        var failureMetric: Counter
        /// `parley_transport_calls_gave_way_total{peer}`: calls to the peer that gave way while it was silent.
        var gaveWayMetric: Counter
        /// Where a link says that it cannot reach its peer (rate-limited, see `PeerLinkHealth`).
        var logger: Logger
        /// Whether the link opens the Raft stream; an edge loop's link to a shard leader carries calls only
        /// (`PeerTransport.call(_:path:body:timeout:on:)`).
        var carriesRaft = true
    }

    let peer: NodeID
    let loop: EventLoop
    private let settings: Settings
    private var address: (host: String, port: Int)
    private var multiplexer: NIOHTTP2Handler.StreamMultiplexer?
    private var connection: Channel?
    /// RPCs made while the connection is being set up.
    private var connectWaiters: [EventLoopPromise<Channel>] = []
    /// The long-lived stream that carries this link's RPCs, and the calls waiting for their answers.
    private var callStream: Channel?
    private var nextCallID: UInt64 = 0
    private var pendingCalls: [UInt64: PendingCall] = [:]
    static let callTimeout: TimeAmount = .seconds(10)
    /// A call may give way (`givesWay`) once the link has heard nothing from its peer for this long: three of
    /// the heartbeat's pings unanswered. A peer that is paused or cut off is closed only after the heartbeat's
    /// 4 s, which is how long such calls waited before.
    static let silentAfter: TimeAmount = .milliseconds(750)
    /// When the peer last answered one of the heartbeat's pings (four a second: enough, so an answered call
    /// costs no clock read for it).
    private var lastHeard = NIODeadline.now()
    /// A peer that does not accept a TCP connection within this long is tried again (at once): under the
    /// kernel's first SYN retransmission (1 s), so a dial made just before a partition heals is not left
    /// waiting for the second one.
    static let connectTimeout: TimeAmount = .milliseconds(900)
    /// Fails calls past their deadline, or that give way, four times a second (one timer per link, not one
    /// per call).
    private var deadlineSweep: RepeatedTask?
    /// Call frames made during this loop tick, written as one DATA frame when the tick's work is done, and
    /// the stream they were made for (a reconnect in between fails them instead of sending them elsewhere).
    private var callsOut: (stream: Channel, bytes: ByteBuffer)?
    private var raftStream: Channel?
    private var connecting = false
    /// A retry is scheduled: until it runs, sends and calls dial themselves at most once per
    /// `earlyDialInterval` (a node sends a dead peer Raft messages many times a second, and each used to be a
    /// new connection attempt; waiting out the whole backoff instead delayed a peer that had just come up).
    private var retryScheduled = false
    private var lastDialAt: NIODeadline?
    private static let earlyDialInterval: TimeAmount = .milliseconds(250)
    private var backoff: TimeAmount
    private var queue: [ByteBuffer] = []
    private var queuedBytes = 0
    private var closed = false
    /// Raft batches dropped because the queue was full (shown on /status).
    private(set) var dropped = 0
    private(set) var connects = 0
    private var health: PeerLinkHealth
    /// Whether the current connection's trouble (a refused stream) is already in `health`.
    private var troubleRecorded = false
    /// The peer protocol version the peer answered with when it last accepted the Raft stream (nil: never).
    private var peerVersion: Int?

    init(peer: NodeID, host: String, port: Int, loop: EventLoop, settings: Settings) {
        self.peer = peer
        self.loop = loop
        self.settings = settings
        address = (host, port)
        backoff = settings.backoff.initial
        health = PeerLinkHealth(firstLogPeriod: settings.backoff.max)
    }

    /// Connects now rather than at the first batch or call.
    func start() {
        loop.execute { self.connectIfNeeded() }
    }

    /// Queues one batch for the peer; sent at once when the Raft stream is up.
    func send(_ batch: [RaftEnvelope]) {
        let bytes = RaftWireCodec.encode(batch)
        // On the link's own loop (the node runs Raft there) the batch goes out now: a leader's appends must
        // leave before the ready cycle blocks in its fsync, not after it.
        if loop.inEventLoop {
            enqueue(bytes)
        } else {
            loop.execute { self.enqueue(bytes) }
        }
    }

    private func enqueue(_ bytes: [UInt8]) {
        guard !closed, bytes.count <= settings.maxFrameBytes else {
            dropped += 1
            settings.droppedMetric.increment()
            return
        }
        let frame = ByteBuffer.lengthPrefixedFrame(capacity: bytes.count) { $0.writeBytes(bytes) }
        queue.append(frame)
        queuedBytes += frame.readableBytes
        while queuedBytes > settings.queueLimitBytes, queue.count > 1 {
            queuedBytes -= queue.removeFirst().readableBytes
            dropped += 1
            settings.droppedMetric.increment()
        }
        flushQueue()
    }

    private func flushQueue() {
        guard let stream = raftStream else { return connectIfNeeded() }
        guard !queue.isEmpty else { return }
        for frame in queue {
            stream.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(frame))), promise: nil)
        }
        stream.flush()
        queue.removeAll(keepingCapacity: true)
        queuedBytes = 0
    }

    /// Calls an RPC path on the peer (at once when called on the link's loop, as the Raft loop does).
    /// `givesWay`: asked while the link has been silent for `silentAfter`; true fails the call with `gaveWay`
    /// (the caller knows somewhere better to go: a shard's new leader), rather than letting it wait for the
    /// heartbeat to close the link or for its deadline.
    func call(path: String, body: [UInt8], timeout: TimeAmount = PeerLink.callTimeout,
              givesWay: (@Sendable () -> Bool)? = nil) -> EventLoopFuture<PeerResponse> {
        guard loop.inEventLoop else {
            return loop.flatSubmit { self.call(path: path, body: body, timeout: timeout, givesWay: givesWay) }
        }
        if let callStream { return call(on: callStream, path: path, body: body, timeout: timeout, givesWay: givesWay) }
        return callStreamWhenConnected().flatMap { stream in
            self.call(on: stream, path: path, body: body, timeout: timeout, givesWay: givesWay)
        }
    }

    private func callStreamWhenConnected() -> EventLoopFuture<Channel> {
        if let callStream { return loop.makeSucceededFuture(callStream) }
        guard !closed else { return loop.makeFailedFuture(PeerLinkError.unavailable(peer)) }
        let promise = loop.makePromise(of: Channel.self)
        connectWaiters.append(promise)
        connectIfNeeded()
        return promise.futureResult
    }

    /// Queues one call frame `[u32 length][u64 id][u16 path length][path][body]` for the RPC stream. The calls
    /// of one loop tick leave together (many length-prefixed frames in one HTTP/2 DATA frame): under load a
    /// forwarding node or an edge sends hundreds of commands per tick, and HTTP/2 framing per call was most of
    /// the transport's cost.
    private func call(on stream: Channel, path: String, body: [UInt8], timeout: TimeAmount,
                      givesWay: (@Sendable () -> Bool)?) -> EventLoopFuture<PeerResponse> {
        nextCallID += 1
        let id = nextCallID
        let promise = loop.makePromise(of: PeerResponse.self)
        pendingCalls[id] = PendingCall(promise: promise, deadline: .now() + timeout, givesWay: givesWay)
        if deadlineSweep == nil {
            deadlineSweep = loop.scheduleRepeatedTask(initialDelay: Self.sweepInterval, delay: Self.sweepInterval) { _ in
                self.failExpiredCalls()
            }
        }
        if callsOut.map({ $0.stream !== stream }) ?? true {
            callsOut = (stream, ByteBuffer())
            loop.execute { self.flushCalls() }
        }
        callsOut!.bytes.writeLengthPrefixedFrame { frame in
            frame.writeInteger(id)
            frame.writeInteger(UInt16(path.utf8.count))
            frame.writeString(path)
            frame.writeBytes(body)
        }
        return promise.futureResult
    }

    private func flushCalls() {
        guard let out = callsOut else { return }
        callsOut = nil
        // Calls made for a stream that has since gone were failed with it (`lost`); never resend them.
        guard let stream = callStream, stream === out.stream else { return }
        stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(out.bytes))), promise: nil)
    }

    private static let sweepInterval = TimeAmount.milliseconds(250)

    private func failExpiredCalls() {
        guard !pendingCalls.isEmpty else { return }
        let now = NIODeadline.now()
        let silent = now - lastHeard >= Self.silentAfter
        var ended: [(id: UInt64, error: PeerLinkError)] = []
        for (id, call) in pendingCalls {
            if call.deadline <= now {
                ended.append((id, .timedOut(peer)))
            } else if silent, let givesWay = call.givesWay, givesWay() {
                ended.append((id, .gaveWay(peer)))
            }
        }
        for (id, error) in ended.sorted(by: { $0.id < $1.id }) {
            if error == .gaveWay(peer) { settings.gaveWayMetric.increment() }
            pendingCalls.removeValue(forKey: id)?.promise.fail(error)
        }
    }

    /// The peer answered a ping: the link is not silent.
    fileprivate func heard() {
        lastHeard = .now()
    }

    /// An answer frame arrived on the RPC stream.
    fileprivate func answered(_ id: UInt64, status: Int, body: [UInt8]) {
        pendingCalls.removeValue(forKey: id)?.promise.succeed(PeerResponse(status: status, body: body))
    }

    /// Request headers for one stream: a fresh credential each time (for this peer, now, with a new nonce:
    /// `PeerAuth`), made only when a connection opens its two long-lived streams.
    private func headers(path: String) -> HPACKHeaders {
        HPACKHeaders([(":method", "POST"), (":scheme", "http"), (":authority", "\(address.host):\(address.port)"),
                      (":path", path), (PeerProtocol.header, "\(PeerProtocol.version)")]
                     + settings.auth.headers(from: settings.nodeID, to: peer, path: path))
    }

    private func connectIfNeeded() {
        guard !closed, multiplexer == nil, !connecting else { return }
        let now = NIODeadline.now()
        if retryScheduled, let last = lastDialAt, now - last < Self.earlyDialInterval { return }
        lastDialAt = now
        connecting = true
        connects += 1
        let promise = loop.makePromise(of: NIOHTTP2Handler.StreamMultiplexer.self)
        let tls = settings.tls
        // The HTTP/2 pipeline must be configured inside the initializer, or the server's first SETTINGS
        // frame can be lost and the first stream hang (SWIFT-NOTES).
        // TCP_NODELAY is a TCP-level option: `.socketOption(.tcp_nodelay)` would set SOL_SOCKET option 1,
        // which is SO_DEBUG, refused to every user but root (issue 15). NIO sets it by default; said here
        // so that no one "adds" it at the wrong level again.
        ClientBootstrap(group: loop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(Self.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: nil))
                    }
                    let mux = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: PeerTransport.connectionConfiguration,
                        streamConfiguration: PeerTransport.streamConfiguration) { stream in
                            stream.eventLoop.makeSucceededVoidFuture()
                        }
                    try channel.pipeline.syncOperations.addHandler(PeerHeartbeat(heard: { self.heard() }))
                    promise.succeed(mux)
                }
            }
            .connect(host: address.host, port: address.port)
            .whenComplete { result in
                self.connecting = false
                switch result {
                case .success(let channel):
                    self.connection = channel
                    channel.closeFuture.whenComplete { _ in
                        if self.connection === channel { self.lost() }  // a late close of an old connection is ignored
                    }
                    promise.futureResult.whenSuccess { mux in self.connected(mux) }
                case .failure(let error):
                    promise.fail(PeerLinkError.unavailable(self.peer))
                    self.troubled(connecting: true, PeerLinkError.describe(error))
                    self.failWaiters()
                    // An attempt that timed out has waited already (a partition drops the SYN): dial again
                    // at once, so a healed link is back within about a connect timeout, not after a backoff.
                    self.retryLater(promptly: PeerLinkError.isTimeout(error))
                }
            }
    }

    private func failWaiters() {
        let waiters = connectWaiters
        connectWaiters = []
        for w in waiters { w.fail(PeerLinkError.unavailable(peer)) }
        let calls = pendingCalls
        pendingCalls = [:]
        callsOut = nil
        for id in calls.keys.sorted() { calls[id]!.promise.fail(PeerLinkError.unavailable(peer)) }
    }

    private func connected(_ mux: NIOHTTP2Handler.StreamMultiplexer) {
        multiplexer = mux
        lastHeard = .now()
        troubleRecorded = false
        backoff = settings.backoff.initial
        let maxBytes = settings.maxFrameBytes
        openStream(mux, path: "/rpc/v1/stream", reader: { PeerCallStreamReader(link: self, maxBytes: maxBytes) },
                   isCurrent: { self.callStream === $0 }) { stream in
            self.callStream = stream
            let waiters = self.connectWaiters
            self.connectWaiters = []
            for w in waiters { w.succeed(stream) }
        }
        // A link to a member known only by address (joining) makes the join call and carries no Raft.
        guard peer != PeerTokenCheck.anyNode, settings.carriesRaft else { return }
        openStream(mux, path: "/raft/v1/stream", reader: { PeerRaftStreamWatcher(link: self) },
                   isCurrent: { self.raftStream === $0 }) { stream in
            self.raftStream = stream
            self.flushQueue()
        }
    }

    /// The peer accepted this node's Raft stream (its credentials): the link is up, and the peer runs
    /// `version` of the peer protocol.
    fileprivate func accepted(version: Int) {
        peerVersion = version
        report(health.up(at: .now()))
        settings.onUp(peer)
    }

    /// The peer accepted the RPC stream: what marks a call-only link (an edge loop's, issue 35) up, as the Raft
    /// stream does every other link — so /status shows it up, and a drop is counted as one, not as a failed
    /// connection attempt.
    fileprivate func callStreamAccepted(version: Int) {
        guard !settings.carriesRaft else { return }
        peerVersion = version
        report(health.up(at: .now()))
    }

    /// The peer answered a stream with a status other than 200 (401: it does not share our secret).
    fileprivate func refused(status: String) {
        troubleRecorded = true
        let why = status == "401"
            ? "the peer refused this node's credentials (401): do both nodes have the same cluster secret?"
            : status == "426"
            ? "the peer does not talk this node's peer protocol version \(PeerProtocol.version) (426): upgrade one version at a time"
            : "the peer refused the stream (HTTP \(status))"
        troubled(connecting: true, why)
    }

    /// Records a failure to connect (or a refused stream) or a drop of a working connection, and logs it
    /// when the rate limit allows.
    private func troubled(connecting: Bool, _ error: String) {
        let now = NIODeadline.now()
        if connecting {
            settings.failureMetric.increment()
            report(health.failed(error, at: now))
        } else {
            report(health.dropped(error, at: now))
        }
    }

    private func report(_ report: PeerLinkHealth.Report?) {
        guard let report else { return }
        var metadata: Logger.Metadata = ["peer": "\(peer)", "address": "\(address.host):\(address.port)"]
        switch report {
        case .unreachable(let error, let attempts, let downFor):
            metadata["error"] = "\(error)"
            metadata["attempts"] = "\(attempts)"
            metadata["lastUp"] = downFor.map { "\(Self.seconds($0)) s ago" } ?? "never"
            settings.logger.warning("cannot reach peer \(peer)", metadata: metadata)
        case .dropped(let error):
            metadata["error"] = "\(error)"
            settings.logger.warning("lost the connection to peer \(peer)", metadata: metadata)
        case .reconnected(let downFor, let attempts):
            metadata["downFor"] = "\(Self.seconds(downFor)) s"
            metadata["attempts"] = "\(attempts)"
            settings.logger.notice("connected to peer \(peer) again", metadata: metadata)
        }
    }

    private static func seconds(_ t: TimeAmount) -> String {
        let tenths = t.nanoseconds / 100_000_000
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// Opens one of the link's long-lived streams. If it cannot be opened, or is refused or reset later
    /// while still current, the whole connection is dropped and the link starts afresh.
    private func openStream(_ mux: NIOHTTP2Handler.StreamMultiplexer, path: String,
                            reader: @escaping @Sendable () -> some ChannelInboundHandler,
                            isCurrent: @escaping (Channel) -> Bool, opened: @escaping (Channel) -> Void) {
        let headers = headers(path: path)
        mux.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture { try stream.pipeline.syncOperations.addHandler(reader()) }
        }.whenComplete { result in
            guard case .success(let stream) = result else {
                self.connection?.close(promise: nil)
                return
            }
            stream.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: headers)), promise: nil)
            stream.closeFuture.whenComplete { _ in
                if isCurrent(stream) { stream.parent?.close(promise: nil) }
            }
            opened(stream)
        }
    }

    private func lost() {
        // A refused stream was recorded already; a working link that closes is a drop, and a connection
        // that closes before its streams opened is a failed attempt (a peer that speaks another protocol).
        if health.isUp {
            troubled(connecting: false, "the connection closed")
        } else if !troubleRecorded {
            troubled(connecting: true, "the connection closed before its streams opened")
        }
        troubleRecorded = true
        settings.onDown(peer)
        failWaiters()
        connection = nil
        multiplexer = nil
        raftStream = nil
        callStream = nil
        retryLater()
    }

    private func retryLater(promptly: Bool = false) {
        guard !closed else { return }
        let delay = promptly ? settings.backoff.initial : backoff
        if !promptly { backoff = min(backoff * 2, settings.backoff.max) }
        retryScheduled = true
        loop.scheduleTask(in: delay) {
            self.retryScheduled = false
            self.connectIfNeeded()
        }
    }

    /// Points the link at a new address (the peer moved); the next connection uses it.
    func update(host: String, port: Int) {
        loop.execute {
            self.address = (host, port)
        }
    }

    func close() -> EventLoopFuture<Void> {
        loop.flatSubmit {
            self.closed = true
            self.queue.removeAll()
            let connection = self.connection
            self.connection = nil
            self.raftStream = nil
            self.callStream = nil
            self.multiplexer = nil
            self.failWaiters()
            self.deadlineSweep?.cancel()
            self.deadlineSweep = nil
            return connection?.close() ?? self.loop.makeSucceededVoidFuture()
        }
    }

    /// Counters and health for /status, read on the link's loop.
    func status() -> EventLoopFuture<PeerTransport.LinkStatus> {
        loop.submit {
            let now = NIODeadline.now()
            return PeerTransport.LinkStatus(
                // A call-only link (an edge loop's, issue 35) is up once its RPC stream is.
                peer: self.peer, connected: (self.settings.carriesRaft ? self.raftStream : self.callStream) != nil && self.health.isUp,
                queuedBatches: self.queue.count,
                droppedBatches: self.dropped, connectFailures: self.health.failures, lastError: self.health.lastError,
                secondsSinceLastError: self.health.secondsSinceError(at: now),
                secondsSinceConnected: self.health.secondsSinceUp(at: now), peerVersion: self.peerVersion)
        }
    }
}

/// A call waiting for its answer.
private struct PendingCall {
    var promise: EventLoopPromise<PeerResponse>
    var deadline: NIODeadline
    var givesWay: (@Sendable () -> Bool)?
}

enum PeerLinkError: Error, Equatable {
    case unavailable(NodeID)
    case timedOut(NodeID)
    /// The link was silent and the caller knew somewhere better to go (`PeerLink.call`'s `givesWay`).
    case gaveWay(NodeID)
    case responseTooLarge

    /// A connect error in a line an operator can act on: the errno text of the first address tried
    /// (NIO's own description lists every address and DNS query), or the error itself.
    static func describe(_ error: Error) -> String {
        if let e = error as? NIOConnectionError {
            if let first = e.connectionErrors.first {
                return "\(first.target): \(describe(first.error))"
            }
            if let dns = e.dnsAError ?? e.dnsAAAAError { return "cannot resolve \(e.host): \(dns)" }
            return "cannot connect to \(e.host):\(e.port)"
        }
        if let e = error as? IOError { return e.description }
        if case ChannelError.connectTimeout(let t)? = error as? ChannelError {
            return "connect timed out after \(t.nanoseconds / 1_000_000) ms"
        }
        return "\(error)"
    }

    /// Whether a connection attempt failed by timing out (rather than being refused or reset).
    static func isTimeout(_ error: any Error) -> Bool {
        if case ChannelError.connectTimeout? = error as? ChannelError { return true }
        if let e = error as? NIOConnectionError {
            return e.connectionErrors.contains { if case ChannelError.connectTimeout? = $0.error as? ChannelError { true } else { false } }
        }
        return false
    }
}

/// Reads the answers on a link's RPC stream: frames `[u32 length][u64 id][u16 status][body]`. A refusal of
/// the stream itself (non-200) or a malformed frame closes it, which fails the calls still waiting.
final class PeerCallStreamReader: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    private let link: PeerLink
    private let maxBytes: Int
    private var buffer = ByteBuffer()

    init(link: PeerLink, maxBytes: Int) {
        self.link = link
        self.maxBytes = maxBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let h):
            // Refused (401: another secret; 426: another version): recorded as why, so a tool can say so.
            switch h.headers.first(name: ":status") {
            case "200"?:
                link.callStreamAccepted(version: PeerProtocol.version(fromHeader: h.headers.first(name: PeerProtocol.header)) ?? 1)
            case let status?:
                link.refused(status: status)
                context.close(promise: nil)
            case nil:
                break  // trailers
            }
        case .data(let d):
            guard case .byteBuffer(var bytes) = d.data else { return }
            buffer.writeBuffer(&bytes)
            while true {
                switch buffer.readLengthPrefixedFrame(maxBytes: maxBytes + 10) {
                case .incomplete:
                    buffer.discardReadBytes()
                    return
                case .oversized:
                    return context.close(promise: nil)
                case .frame(var frame):
                    guard let id = frame.readInteger(as: UInt64.self), let status = frame.readInteger(as: UInt16.self) else {
                        return context.close(promise: nil)
                    }
                    link.answered(id, status: Int(status), body: Array(buffer: frame))
                }
            }
        default:
            break
        }
    }
}

/// The client end of the Raft stream reads nothing but the server's answer: acceptance (200) is what makes
/// the link count as up; a refusal is recorded on the link and closes the stream so the link tries again.
final class PeerRaftStreamWatcher: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    private let link: PeerLink

    init(link: PeerLink) {
        self.link = link
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .headers(let h) = unwrapInboundIn(data), let status = h.headers.first(name: ":status") else { return }
        if status == "200" {
            link.accepted(version: PeerProtocol.version(fromHeader: h.headers.first(name: PeerProtocol.header)) ?? 1)
        } else {
            link.refused(status: status)
            context.close(promise: nil)
        }
    }
}
