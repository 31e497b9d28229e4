import NIOCore
import NIOHTTP2

/// The dialing side of a peer link sends an HTTP/2 PING every `interval`, which the peer's HTTP/2 layer
/// answers on its event loop; a connection with no answer for `timeout` is closed, and the link reports the
/// peer down and dials again. Without it a peer that is paused (SIGSTOP, a stuck VM: its kernel still
/// acknowledges TCP) or cut off by a silent partition (dropped packets: the connection looks open for
/// minutes) was never reported down, so Raft groups that had gone quiet (quiesced) slept on, following a
/// leader that could not lead, until something else woke them (issue 16). Each answer is also told to the link
/// (`heard`): a call waiting on a link that has heard nothing for a while may give way (`PeerLink.silentAfter`).
final class PeerHeartbeat: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A quarter second, so a link silent for three of them is known within a second (a call to a paused
    /// leader gives way then, not after `timeout`); four pings a second per link cost nothing measurable.
    static let interval: TimeAmount = .milliseconds(250)
    /// Long enough for a busy peer's loop (a debug build under load) to answer; short enough that a quiet
    /// group elects a new leader within about the lease rule's takeover time.
    static let timeout: TimeAmount = .seconds(4)

    private let interval: TimeAmount
    private let timeout: TimeAmount
    private let heard: () -> Void
    private var lastHeard = NIODeadline.now()
    private var sent: UInt64 = 0
    private var task: RepeatedTask?

    /// `heard` runs on the channel's loop at each answer.
    init(interval: TimeAmount = PeerHeartbeat.interval, timeout: TimeAmount = PeerHeartbeat.timeout,
         heard: @escaping () -> Void = {}) {
        self.interval = interval
        self.timeout = timeout
        self.heard = heard
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .ping(_, ack: true) = unwrapInboundIn(data).payload {
            lastHeard = .now()
            heard()
        }
        context.fireChannelRead(data)
    }

    private func start(_ context: ChannelHandlerContext) {
        guard task == nil else { return }
        lastHeard = .now()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        task = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let (heartbeat, context) = bound.value
            heartbeat.beat(context)
        }
    }

    private func beat(_ context: ChannelHandlerContext) {
        guard NIODeadline.now() - lastHeard <= timeout else {
            stop()
            context.close(promise: nil)
            return
        }
        sent &+= 1
        let ping = HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: sent), ack: false))
        context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
    }

    private func stop() {
        task?.cancel()
        task = nil
    }
}
