import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// What the fan-out benchmark's connections report to: deliveries counted, latency sampled.
final class FanoutTally: @unchecked Sendable {
    private let lock = NIOLock()
    private var delivered = 0
    /// Of `delivered`, the high-priority messages (SPEC D3: never shed).
    private var highDelivered = 0
    private var samples: [Double] = []
    private var lastDelivery: UInt64 = 0

    func record(latencyNanos: UInt64?, at now: UInt64, high: Bool = false) {
        lock.withLock {
            delivered += 1
            if high { highDelivered += 1 }
            if let latencyNanos { samples.append(Double(latencyNanos) / 1e6) }
            lastDelivery = max(lastDelivery, now)
        }
    }

    func reset() { lock.withLock { delivered = 0; highDelivered = 0; samples = []; lastDelivery = 0 } }

    /// Members that entered again after their connection failed while entering, and the close reasons seen.
    private var retried = 0
    private var reasons: [String: Int] = [:]
    func retry(after error: any Error) {
        lock.withLock { retried += 1; reasons["\(error)".prefix(120).description, default: 0] += 1 }
    }
    var retries: (count: Int, reasons: [String: Int]) { lock.withLock { (retried, reasons) } }

    var snapshot: (delivered: Int, samples: [Double], last: UInt64) { lock.withLock { (delivered, samples, lastDelivery) } }
    var high: Int { lock.withLock { highDelivered } }
}

/// One client of the benchmark speaking docs/protocol.md over a raw NIO WebSocket (thin on purpose: ten
/// thousand of these share two threads): hello, enter, then count message events. The sender also sends.
final class FanoutConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Sent after the hello answer; nil: the connection stays idle after hello (the idle-memory measure).
    let enterFrame: String?
    /// Once entered, a `ping` this often (docs/protocol.md: a client that sends nothing for 75 s is closed as
    /// idle), the first at a random point of the period; nil: none.
    let heartbeat: TimeAmount?
    /// The close frame the edge sent, if any: why the connection ended.
    private var closedBy: String?
    let tally: FanoutTally
    /// Only some receivers sample latency, to keep the sample count bounded.
    let samplesLatency: Bool
    let entered: EventLoopPromise<Void>
    private var context: ChannelHandlerContext?
    private var nextID = 3
    private var answers: [Int: (promise: EventLoopPromise<Void>, frame: String)] = [:]
    /// Sends the edge's request budget (A1) answered 416 and this connection sent again after `retryAfterMs`,
    /// as a client does.
    let budgetRetries = NIOLockedValueBox(0)  // written on the channel's loop, read by the benchmark

    init(enterFrame: String?, tally: FanoutTally, samplesLatency: Bool, entered: EventLoopPromise<Void>,
         heartbeat: TimeAmount? = nil) {
        self.enterFrame = enterFrame
        self.heartbeat = heartbeat
        self.tally = tally
        self.samplesLatency = samplesLatency
        self.entered = entered
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        send(#"{"id":1,"op":"hello","versions":[1],"client":"parley-bench"}"#)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        entered.fail(closedBy.map(FanoutError.closed) ?? ChannelError.ioOnClosedChannel)
        for a in answers.values { a.promise.fail(ChannelError.ioOnClosedChannel) }
        answers.removeAll()
    }

    private func send(_ text: String) {
        guard let context else { return }
        let buffer = context.channel.allocator.buffer(string: text)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer)),
                              promise: nil)
    }

    /// Sends a message to the room (on the channel's loop); the future completes on its answer.
    func sendMessage(roomId: String, body: String, priority: String = "normal") -> EventLoopFuture<Void> {
        let loop = entered.futureResult.eventLoop
        return loop.flatSubmit {
            let id = self.nextID
            self.nextID += 1
            let promise = loop.makePromise(of: Void.self)
            let frame = #"{"id":\#(id),"op":"sendMessage","roomId":"\#(roomId)","type":"text","body":"\#(body)","priority":"\#(priority)"}"#
            self.answers[id] = (promise, frame)
            self.send(frame)
            return promise.futureResult
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var data = frame.unmaskedData
            // Messages are the hot path: recognised in the frame's bytes, with no String made and nothing parsed —
            // on a small machine this process's CPU is the nodes' too. Answers are rare and parsed properly.
            if Self.find(Self.messageEvent, in: data) != nil {
                recordMessage(data)
                return
            }
            guard let text = data.readString(length: data.readableBytes) else { return }
            handle(text)
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(),
                                                                 data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            var data = frame.unmaskedData
            let code = data.readInteger(as: UInt16.self) ?? 0
            closedBy = "\(code) \(data.readString(length: data.readableBytes) ?? "")"
            context.close(promise: nil)
        default:
            break
        }
    }

    private static let messageEvent = Array(#""event":"message""#.utf8)
    private static let highPriority = Array(#""priority":"high""#.utf8)
    private static let sentMark = Array("t:".utf8)

    /// Where `needle` first occurs in `buffer`'s readable bytes.
    static func find(_ needle: [UInt8], in buffer: ByteBuffer) -> Int? {
        buffer.withUnsafeReadableBytes { hay -> Int? in
            guard let first = needle.first, hay.count >= needle.count else { return nil }
            var i = 0
            while i <= hay.count - needle.count {
                if hay[i] == first {
                    var j = 1
                    while j < needle.count, hay[i + j] == needle[j] { j += 1 }
                    if j == needle.count { return i }
                }
                i += 1
            }
            return nil
        }
    }

    /// A message event: counted, and (for one member in 20) its latency from the send time in its body.
    private func recordMessage(_ data: ByteBuffer) {
        let now = DispatchTime.now().uptimeNanoseconds
        var latency: UInt64?
        if samplesLatency, let at = Self.find(Self.sentMark, in: data) {
            let sent = data.withUnsafeReadableBytes { bytes -> UInt64? in
                var i = at + Self.sentMark.count, value: UInt64 = 0
                while i < bytes.count, (48...57).contains(bytes[i]) {
                    value = value &* 10 &+ UInt64(bytes[i] - 48)
                    i += 1
                }
                return i > at + Self.sentMark.count ? value : nil
            }
            if let sent, now >= sent { latency = now - sent }
        }
        tally.record(latencyNanos: latency, at: now, high: Self.find(Self.highPriority, in: data) != nil)
    }

    private func handle(_ text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let id = object["id"] as? Int else { return }
        let ok = object["ok"] as? Bool == true
        switch id {
        case 1:
            if !ok { entered.fail(FanoutError.refused(text)) } else if let enterFrame { send(enterFrame) } else { entered.succeed() }
        case 2:
            if ok { entered.succeed(); startHeartbeat() } else { entered.fail(FanoutError.refused(text)) }
        default:
            guard let (promise, frame) = answers[id] else { return }
            if !ok, let error = object["error"] as? [String: Any], error["code"] as? Int == 416, let context {
                // Over the connection's request budget: the same request again once the edge says.
                budgetRetries.withLockedValue { $0 += 1 }
                let wait = max(1, error["retryAfterMs"] as? Int ?? 10)
                let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .milliseconds(Int64(wait))) { bound.value.send(frame) }
                return
            }
            answers[id] = nil
            if ok { promise.succeed() } else { promise.fail(FanoutError.refused(text)) }
        }
    }

    private func startHeartbeat() {
        guard let heartbeat, let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let first = TimeAmount.nanoseconds(Int64.random(in: 0..<max(1, heartbeat.nanoseconds)))
        context.eventLoop.scheduleRepeatedTask(initialDelay: first, delay: heartbeat) { task in
            let connection = bound.value
            guard connection.context != nil else { task.cancel(); return }
            let id = connection.nextID
            connection.nextID += 1
            connection.send(#"{"id":\#(id),"op":"ping"}"#)
        }
    }

    /// Opens a WebSocket to `host:port/ws` and installs a connection that enters with `enterFrame`.
    /// `receiveBuffer`: the socket's receive buffer (a member that will stop reading keeps a small one, so the
    /// node, not this process's kernel, holds what it does not read).
    static func connect(host: String, port: Int, group: EventLoopGroup, enterFrame: String?, tally: FanoutTally,
                        samplesLatency: Bool, receiveBuffer: Int32? = nil, heartbeat: TimeAmount? = nil) async throws
        -> (Channel, FanoutConnection) {
        let loop = group.next()
        let entered = loop.makePromise(of: Void.self)
        let connection = FanoutConnection(enterFrame: enterFrame, tally: tally, samplesLatency: samplesLatency, entered: entered,
                                          heartbeat: heartbeat)
        let upgraded = loop.makePromise(of: Void.self)
        var bootstrap = ClientBootstrap(group: loop).channelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
        if let receiveBuffer {
            bootstrap = bootstrap.channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer))
        }
        let channel = try await bootstrap
            .channelInitializer { channel in
                let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: 1 << 20, upgradePipelineHandler: { channel, _ in
                    channel.pipeline.addHandler(connection).map { upgraded.succeed() }
                })
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: "\(host):\(port)")
                let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/ws", headers: headers)
                return channel.pipeline.addHTTPClientHandlers(withClientUpgrade: (
                    upgraders: [upgrader], completionHandler: { _ in })).flatMap {
                    channel.pipeline.addHandler(UpgradeRequestWriter(head: head))
                }
            }
            .connect(host: host, port: port).get()
        channel.closeFuture.whenComplete { _ in upgraded.fail(ChannelError.ioOnClosedChannel) }
        try await upgraded.futureResult.get()
        try await entered.futureResult.get()
        return (channel, connection)
    }
}

extension FanoutConnection {
    /// Anonymous members `indices` entering `room` round-robin over `ports`, `window` at a time; one in 20
    /// samples latency. The first `stalled` indices stop reading once entered (a 4 KiB receive buffer). A member
    /// whose connection fails while it enters tries again, as a client's SDK does (at most 9 times, 1 to 10
    /// seconds apart), counted in `tally.retries`.
    static func enterMembers(_ indices: [Int], room: String, app: String, ports: [Int], group: EventLoopGroup,
                             tally: FanoutTally, stalled: Int = 0, stalledTally: FanoutTally = FanoutTally(),
                             window: Int = 200, heartbeat: TimeAmount? = nil) async throws -> [Channel] {
        var channels: [Channel] = []
        var next = 0
        try await withThrowingTaskGroup(of: Channel.self) { tasks in
            func open(_ i: Int) {
                let port = ports[i % ports.count]
                let enter = #"{"id":2,"op":"enter","roomId":"\#(room)","auth":{"mode":"anonymous","appKey":"\#(app)"},"nickname":"m\#(i)","avatar":"a"}"#
                let stalls = i < stalled
                tasks.addTask {
                    for attempt in 1... {
                        do {
                            let channel = try await FanoutConnection.connect(
                                host: "127.0.0.1", port: port, group: group, enterFrame: enter, tally: stalls ? stalledTally : tally,
                                samplesLatency: !stalls && i % 20 == 0, receiveBuffer: stalls ? 4096 : nil,
                                heartbeat: stalls ? nil : heartbeat).0
                            if stalls { try await channel.setOption(ChannelOptions.autoRead, value: false) }
                            return channel
                        } catch {
                            guard attempt < 10 else { throw FanoutError.gaveUp(member: i, "\(error)") }
                            tally.retry(after: error)
                            try await Task.sleep(for: .seconds(min(attempt, 10)))
                        }
                    }
                    preconditionFailure("unreachable")
                }
            }
            while next < min(window, indices.count) { open(indices[next]); next += 1 }
            for try await channel in tasks {
                channels.append(channel)
                if next < indices.count { open(indices[next]); next += 1 }
            }
        }
        return channels
    }
}

enum FanoutError: Error, CustomStringConvertible {
    case refused(String)
    /// The edge closed the connection with this close frame (code and reason).
    case closed(String)
    /// A member's connection failed every time it tried to enter.
    case gaveUp(member: Int, String)
    var description: String {
        switch self {
        case .refused(let t): "refused: \(t.prefix(300))"
        case .closed(let t): "closed by the edge: \(t.prefix(300))"
        case .gaveUp(let member, let t): "member \(member) could not enter in 10 tries: \(t.prefix(300))"
        }
    }
}

/// Writes the HTTP upgrade request once the connection is up.
private final class UpgradeRequestWriter: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart
    let head: HTTPRequestHead

    init(head: HTTPRequestHead) { self.head = head }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }
}
