import NIOCore
import NIOWebSocket

/// One client WebSocket after the upgrade, on its event loop: the RFC 6455 rules (masking, reserved bits and
/// opcodes, fragments, control frames, UTF-8, the close handshake), the decoding of whole messages into
/// requests, and their hand-off to the edge in lanes (`RequestLanes`: a room's in order, rooms side by side).
///
/// Why a plain channel handler and not a task per connection: an idle connection must cost little (issue 5's
/// ≤ 10 KiB target). Nothing here runs while a connection is quiet; a task exists only while one of its
/// messages is being handled by the `Edge` actor, and the edge's frames come back through the event loop's
/// `LoopOutbox` (written and flushed in bursts).
final class ClientSocketHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    enum Mode {
        /// The client protocol (`/ws`).
        case chat(Edge)
        /// Every message written back as it came (`/ws/echo`, for the Autobahn cases only).
        case echo
    }

    /// What the edge is asked to do for the connection, in lanes (`RequestLanes`): a room's requests one at
    /// a time in order, different rooms side by side; the connection's own events alone.
    private enum Job {
        case open
        case request(ClientRequest)
        case rejected(RejectedFrame)
        case refuse(ProtocolError, closeCode: UInt16)
        case idle
        case closed

        var lane: RequestLanes<Job>.Lane {
            switch self {
            case .open, .refuse, .idle, .closed: return .barrier
            case .rejected: return .named("")
            case .request(let r):
                if Edge.barrierOps.contains(r.op) { return .barrier }
                // IM ops keep their order among themselves; room ids are app-scoped only later, but within one
                // connection the raw id names the room.
                if ImOp.names.contains(r.op) { return .named("\u{1}im") }
                if r.op == "ping" { return .named("\u{1}ping") }
                if case .string(let roomId)? = r.fields.values["roomId"] { return .named("r" + roomId) }
                return .named("")
            }
        }
    }

    private let mode: Mode
    /// Largest message after reassembly; larger ones are refused (chat: 4005 then 1009; echo: 1009).
    private let maxMessageBytes: Int
    /// Before the edge accepted `hello` (chat), a message — finished or not — may hold at most this many
    /// bytes, and `hello` must come within `helloDeadline` (SPEC A9): a stranger's connection holds little
    /// (1,000 connections each holding a 64 KB unfinished message took 117 MB before).
    private let preHelloMessageBytes: Int
    /// Issue 33 (chat): a message in fragments may total at most this many bytes and must be finished within
    /// `messageDeadline` of its first fragment; one in a single frame may be up to `maxMessageBytes`.
    private let fragmentedMessageBytes: Int
    private let messageDeadline: TimeAmount
    private var messageTimer: Scheduled<Void>?
    private let helloDeadline: TimeAmount
    private var helloDone = false
    private var helloTimer: Scheduled<Void>?
    private let closeTimeout: TimeAmount
    /// A connection whose last data frame (text, binary, continuation) is this old is idle (chat: 1001 and its
    /// sessions end). Pings and pongs do not count (docs/protocol.md): a client cannot hold a connection with
    /// WebSocket pings alone (issue 33). One timer per connection, moved on only when it fires.
    private let idleTimeout: TimeAmount
    private var lastData = NIODeadline.now()
    private var idleTimer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// `context.channel`, kept: asked once per delivery, and reaching it through the pipeline each time showed.
    private var channel: (any Channel)?
    /// The edge's handle on this connection (chat mode); dropped with the handler, which it refers to.
    private var socket: ClientSocket?
    private var remoteHost = "?"
    private var eventLoop: (any EventLoop)?
    /// The edge's number for the connection, known once the `open` job ran.
    private var connection: UInt64?

    /// The message being reassembled from fragments (nil: none in progress).
    private var message: ByteBuffer?
    private var messageIsText = false
    /// A message was refused: data frames are dropped until the close handshake ends the connection.
    private var refusing = false
    /// A close frame went out: nothing but the peer's close (or the timeout) follows.
    private var closeSent = false
    private var failed = false
    /// The client ended the connection itself (a close frame, or its end of the TCP connection).
    private var peerEnded = false
    /// This connection's failure was already counted (`errorCaught`).
    private var errorCounted = false
    private var needsFlush = false

    /// The connection's requests for the edge, waiting or running; at most `maxRunning` run at once.
    private var lanes = RequestLanes<Job>(maxRunning: 16)
    /// Reads wait while this many messages are queued or running for the edge (a client that sends faster
    /// than it is answered is slowed down by TCP, not buffered without bound).
    private let maxQueuedMessages = 32
    private var readHeld = false
    /// Where whole frames are written past the frame encoder.
    private let passage: FrameBytesPassage
    /// A2's per-frame clock, stopped while reads are held here.
    private let frameDeadline: FrameDeadline?
    /// SPEC D2: the most a connection may have unsent (`EdgeSettings.maxQueuedBytes`). Past half of it (the
    /// write buffer's high water mark) it is behind: its low-priority events are skipped and remembered in
    /// `skipped` until it is writable again; past all of it, it is closed 1008.
    private let unsentBound: Int
    private var skipped = ShedSeqs()

    init(mode: Mode, maxMessageBytes: Int, preHelloMessageBytes: Int = 4096, fragmentedMessageBytes: Int = 8192,
         messageDeadline: TimeAmount = .seconds(10), helloDeadline: TimeAmount = .seconds(10),
         idleTimeout: TimeAmount = .seconds(75), closeTimeout: TimeAmount = .seconds(5),
         unsentBound: Int = 1 << 20, passage: FrameBytesPassage, frameDeadline: FrameDeadline? = nil) {
        self.mode = mode
        self.passage = passage
        self.frameDeadline = frameDeadline
        self.unsentBound = unsentBound
        self.maxMessageBytes = maxMessageBytes
        self.preHelloMessageBytes = min(preHelloMessageBytes, maxMessageBytes)
        self.fragmentedMessageBytes = fragmentedMessageBytes
        self.messageDeadline = messageDeadline
        self.helloDeadline = helloDeadline
        self.idleTimeout = idleTimeout
        self.closeTimeout = closeTimeout
    }

    /// The largest message the connection may send now.
    private var messageLimit: Int {
        if case .chat = mode, !helloDone { return preHelloMessageBytes }
        return maxMessageBytes
    }

    /// The most a message being reassembled from fragments may hold (chat; the echo mode of the conformance
    /// runs keeps the whole size).
    private var fragmentedLimit: Int {
        guard case .chat = mode else { return messageLimit }
        return min(messageLimit, fragmentedMessageBytes)
    }

    /// The edge accepted the connection's `hello` (on the loop).
    func helloAccepted() {
        helloDone = true
        helloTimer?.cancel()
        helloTimer = nil
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        channel = context.channel
        eventLoop = context.eventLoop
        remoteHost = context.channel.remoteAddress?.ipAddress ?? "?"
        lastData = .now()
        armIdleTimer(in: idleTimeout)
        guard case .chat(let edge) = mode else { return }
        socket = ClientSocket(handler: self, eventLoop: context.eventLoop, outbox: edge.outboxes.outbox(for: context.eventLoop))
        enqueue(.open)
        let me = NIOLoopBound(self, eventLoop: context.eventLoop)
        helloTimer = context.eventLoop.scheduleTask(in: helloDeadline) {
            let handler = me.value
            guard !handler.helloDone, !handler.closeSent else { return }
            handler.refuse(.helloRequired, closeCode: 1008)
        }
    }

    /// The timers hold the handler strongly (no `weak self`: a weak reference gives an object a side table,
    /// and every retain and release of it then takes the slow path — the fan-out retains this handler once per
    /// delivery); cancelling them here lets it go.
    func handlerRemoved(context: ChannelHandlerContext) {
        helloTimer?.cancel()
        idleTimer?.cancel()
        messageTimer?.cancel()
        self.context = nil
        channel = nil
        socket = nil  // breaks the socket ↔ handler cycle; the edge forgets its copy on `closed`
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .chat(let edge) = mode {
            // Neither side closed it and no error reached this handler: a write failed (a reset that came
            // while an answer was being written fails that write, which NIO reports by closing the channel).
            if !closeSent, !failed, !peerEnded, !errorCounted {
                edge.metrics?.closed("error")
                edge.connectionErrors.happened(["error": "the connection failed while writing",
                                                "remote": "\(context.remoteAddress.map { "\($0)" } ?? "?")"])
            }
            enqueue(.closed)
        }
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // SPEC F3: the client's end of the socket closed without a close frame (a process that exited, a
        // phone that dropped the app). The HTTP server allows half-closed sockets, so NIO reports this rather
        // than closing; a WebSocket client that can no longer send is gone: close now, which ends its sessions
        // as a disconnect does, instead of leaving the socket in CLOSE-WAIT until the idle timeout (75 s).
        if let channelEvent = event as? ChannelEvent, channelEvent == .inputClosed {
            peerEnded = true
            context.close(promise: nil)
            return
        }
        if event is FrameDeadline.Expired {
            failed = true
            closeSent = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Fires `in` from now; then the connection is idle unless a data frame came since, in which case it
    /// waits for what is left of the timeout after that frame.
    private func armIdleTimer(in delay: TimeAmount) {
        guard let eventLoop else { return }
        let me = NIOLoopBound(self, eventLoop: eventLoop)
        idleTimer = eventLoop.scheduleTask(in: delay) {
            let handler = me.value
            guard !handler.closeSent, !handler.failed else { return }
            let quiet = NIODeadline.now() - handler.lastData
            guard quiet >= handler.idleTimeout else { return handler.armIdleTimer(in: handler.idleTimeout - quiet) }
            switch handler.mode {
            case .chat: handler.enqueue(.idle)
            case .echo: handler.sendClose(code: 1001, reason: "idle timeout")
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // WebSocket protocol errors (too large, fragmented control frames) were answered with a close by
        // `WebSocketProtocolErrorHandler`; anything else ends the connection.
        guard !(error is NIOWebSocketError) else { return }
        if case .chat(let edge) = mode, !errorCounted, !closeSent, !peerEnded {
            edge.metrics?.closed("error")
            edge.connectionErrors.happened(["error": "\(error)", "remote": "\(context.remoteAddress.map { "\($0)" } ?? "?")"])
        }
        errorCounted = true
        context.close(promise: nil)
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil else { return fail(1002, "client frames must be masked") }
        guard !frame.rsv1, !frame.rsv2, !frame.rsv3 else { return fail(1002, "reserved bits set") }
        switch frame.opcode {
        case .ping:
            guard !closeSent else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)),
                                  promise: nil)
        case .pong:
            break
        case .connectionClose:
            peerClosed(frame)
        case .text, .binary:
            guard message == nil else { return fail(1002, "a new message inside a fragmented one") }
            guard !refusing, !closeSent else { return }
            if frame.opcode == .binary, case .chat = mode {
                return refuse(.malformedFrame("binary frame"), closeCode: 1003)
            }
            messageIsText = frame.opcode == .text
            message = ByteBuffer()
            append(frame)
        case .continuation:
            guard !refusing, !closeSent else { return }
            guard message != nil else { return fail(1002, "continuation without a message") }
            append(frame)
        default:
            fail(1002, "reserved opcode")
        }
    }

    private func append(_ frame: WebSocketFrame) {
        lastData = .now()
        var data = frame.unmaskedData
        let first = message!.readableBytes == 0
        let limit = first && frame.fin ? messageLimit : fragmentedLimit
        guard message!.readableBytes + data.readableBytes <= limit else {
            message = nil
            endMessageDeadline()
            switch mode {
            case .chat: refuse(limit == messageLimit ? .frameTooLarge(limit) : .fragmentedMessageTooLarge(limit),
                               closeCode: 1009)
            case .echo: fail(1009, "message too large")
            }
            return
        }
        if first && !frame.fin { startMessageDeadline() }
        if first && frame.fin {
            message = data  // one-frame message: no copy
        } else {
            message!.writeBuffer(&data)
        }
        guard frame.fin else { return }
        endMessageDeadline()
        let bytes = message!
        message = nil
        var text: String?
        if messageIsText {
            text = String(validating: bytes.readableBytesView, as: UTF8.self)
            guard text != nil else {
                switch mode {
                case .chat: refuse(.malformedFrame("text is not UTF-8"), closeCode: 1007)
                case .echo: fail(1007, "text is not UTF-8")
                }
                return
            }
        }
        switch mode {
        case .chat:
            // Decoded here, on the connection's loop, not inside the edge's actor.
            do {
                enqueue(.request(try ClientRequest.parse(text!)))
            } catch {
                enqueue(.rejected(error))
            }
        case .echo:
            context?.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: messageIsText ? .text : .binary,
                                                                   data: bytes)), promise: nil)
        }
    }

    /// A message in fragments began (chat): it must be finished in time, or the connection is refused and closed.
    private func startMessageDeadline() {
        guard case .chat(let edge) = mode, let loop = eventLoop else { return }
        let millis = Int(messageDeadline.nanoseconds / 1_000_000)
        let me = NIOLoopBound(self, eventLoop: loop)
        messageTimer = loop.scheduleTask(in: messageDeadline) {
            let handler = me.value
            guard handler.message != nil, !handler.closeSent, !handler.refusing else { return }
            handler.message = nil
            edge.metrics?.closed("messageTooSlow")
            handler.refuse(.messageTooSlow(millis), closeCode: 1008)
        }
    }

    private func endMessageDeadline() {
        messageTimer?.cancel()
        messageTimer = nil
    }

    /// The edge answers the refusal (an error frame, then its close); frames until then are dropped.
    private func refuse(_ error: ProtocolError, closeCode: UInt16) {
        refusing = true
        enqueue(.refuse(error, closeCode: closeCode))
    }

    /// The peer's close: answered with the same code when it is a valid one (1002 / 1007 when not), then the
    /// connection ends. After our own close it just ends.
    private func peerClosed(_ frame: WebSocketFrame) {
        peerEnded = true
        var data = frame.unmaskedData
        var reply: (code: UInt16, reason: String)?
        if data.readableBytes == 1 {
            reply = (1002, "close payload of one byte")
        } else if let code = data.readInteger(as: UInt16.self) {
            if !Self.isValidCloseCode(code) {
                reply = (1002, "invalid close code")
            } else if String(validating: data.readableBytesView, as: UTF8.self) == nil {
                reply = (1007, "close reason is not UTF-8")
            } else {
                reply = (code, "")
            }
        }
        guard let context else { return }
        if closeSent {
            context.close(promise: nil)
            return
        }
        closeSent = true
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(Self.closeFrame(reply))).whenComplete { _ in channel.close(promise: nil) }
    }

    static func isValidCloseCode(_ code: UInt16) -> Bool {
        (1000...1003).contains(code) || (1007...1011).contains(code) || (3000...4999).contains(code)
    }

    // MARK: Writing (on the event loop, from the LoopOutbox)

    /// Writes one text frame without flushing. SPEC D2: a connection still above the high water mark after a
    /// flush is behind — a low-priority event is skipped (and the client told once it catches up); one that
    /// would go past `unsentBound` cannot keep up: it is closed (1008) and nothing more is queued for it.
    /// Returns whether the connection now waits for a flush it did not wait for before (its first frame since
    /// the last flush): the outbox flushes each such connection once.
    @discardableResult
    func write(text frame: TextFrame) -> Bool {
        guard let context, let channel, !closeSent, !failed else { return false }
        if !channel.isWritable {
            context.flush()
            needsFlush = false
            if !channel.isWritable {
                if let skippable = frame.sheddable {
                    skipped.add(roomId: skippable.roomId, seq: skippable.seq)
                    if case .chat(let edge) = mode { edge.metrics?.shed("slow") }
                    return false
                }
                let unsent = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? unsentBound
                guard unsent + frame.bytes.readableBytes <= unsentBound else {
                    failed = true
                    closeSent = true
                    if case .chat(let edge) = mode { edge.metrics?.closed("tooSlow") }
                    context.write(wrapOutboundOut(Self.closeFrame((1008, "too slow"))), promise: nil)
                    context.close(promise: nil)
                    return false
                }
            }
        }
        let waited = needsFlush
        passFrame(frame, context)
        return !waited
    }

    /// The frame is whole already: it goes in past the frame encoder (`FrameBytesPassage`).
    private func passFrame(_ frame: TextFrame, _ context: ChannelHandlerContext) {
        guard let passage = passage.context else { return }
        passage.write(NIOAny(IOData.byteBuffer(frame.bytes)), promise: nil)
        needsFlush = true
    }

    /// D2: the connection caught up (below the low water mark): it is told what it skipped, one `shed` event
    /// per room, ahead of whatever comes next.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !skipped.isEmpty, !closeSent, !failed {
            for frame in skipped.takeFrames(reason: "slow") { passFrame(frame, context) }
            flushWrites()
        }
        context.fireChannelWritabilityChanged()
    }

    func flushWrites() {
        guard needsFlush, let context else { return }
        needsFlush = false
        // From past the frame encoder, which holds nothing back: one handler fewer per flush.
        (passage.context ?? context).flush()
    }

    /// Starts the close handshake: our close frame, then the connection ends when the peer answers or after
    /// `closeTimeout`.
    func sendClose(code: UInt16, reason: String) {
        guard let context, !closeSent else { return }
        closeSent = true
        needsFlush = false
        context.writeAndFlush(wrapOutboundOut(Self.closeFrame((code, reason))), promise: nil)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: closeTimeout) { channel.close(promise: nil) }
    }

    /// A protocol violation: our close frame with `code`, then the connection ends without waiting.
    private func fail(_ code: UInt16, _ reason: String) {
        guard let context else { return }
        failed = true
        message = nil
        guard !closeSent else {
            context.close(promise: nil)
            return
        }
        closeSent = true
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(Self.closeFrame((code, reason)))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    private static func closeFrame(_ reply: (code: UInt16, reason: String)?) -> WebSocketFrame {
        var data = ByteBuffer()
        if let reply {
            data.writeInteger(reply.code)
            // Control frames carry at most 125 bytes.
            data.writeString(String(decoding: reply.reason.utf8.prefix(123), as: UTF8.self))
        }
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }

    // MARK: Reads held while the edge is behind

    func read(context: ChannelHandlerContext) {
        if lanes.count >= maxQueuedMessages {
            readHeld = true
            // The edge, not the client, now keeps an open frame or a message in fragments from finishing: their
            // clocks stop, and start again in full when reads go on.
            frameDeadline?.holdReads()
            endMessageDeadline()
        } else {
            context.read()
        }
    }

    // MARK: Jobs for the edge, in lanes

    private func enqueue(_ job: Job) {
        lanes.add(job, lane: job.lane)
        runStartableJobs()
    }

    private func runStartableJobs() {
        guard case .chat(let edge) = mode, let eventLoop else { return }
        for (lane, job) in lanes.startable() {
            run(job, lane: lane, edge: edge, eventLoop: eventLoop)
        }
        if readHeld, lanes.count < maxQueuedMessages, let context {
            readHeld = false
            frameDeadline?.resumeReads()
            if message != nil, messageTimer == nil { startMessageDeadline() }
            context.read()
        }
    }

    private func run(_ job: Job, lane: RequestLanes<Job>.Lane, edge: Edge, eventLoop: any EventLoop) {
        let me = NIOLoopBound(self, eventLoop: eventLoop)
        // Issue 35 item 3: most requests are answered here, on the connection's loop, with no actor hop.
        if case .request(let request) = job, let connection, let socket,
           let answered = edge.receiveOnLoop(connection, socket: socket, request, loop: eventLoop) {
            answered.whenComplete { _ in
                let handler = me.value
                handler.lanes.finished(lane)
                handler.runStartableJobs()
            }
            return
        }
        let socket = socket
        let connection = connection
        let remoteHost = remoteHost
        Task {
            var opened: UInt64?
            switch job {
            case .open:
                guard let socket else { break }
                opened = await edge.open(socket: socket, remoteHost: remoteHost)
            case .request(let request):
                if let connection { await edge.receive(connection, request) }
            case .rejected(let frame):
                if let connection { await edge.reject(connection, frame) }
            case .refuse(let error, let code):
                if let connection { await edge.refuseFrame(connection, error, closeCode: code) }
            case .idle:
                if let connection { await edge.idle(connection) }
            case .closed:
                // The last job: nothing runs on the (possibly stopping) event loop after it.
                if let connection { await edge.closed(connection) }
                return
            }
            let number = opened
            eventLoop.execute {
                let handler = me.value
                if let number { handler.connection = number }
                handler.lanes.finished(lane)
                handler.runStartableJobs()
            }
        }
    }
}
