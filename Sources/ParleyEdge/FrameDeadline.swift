import NIOCore
import NIOWebSocket

/// SPEC A2 on an upgraded WebSocket: every frame must arrive whole within `limit` of its first byte. The
/// frame decoder holds a frame's bytes until the last one (up to `EdgeSettings.transportFrameLimit`, 1 MiB),
/// and the idle timeout is reset by any byte: without this a client could announce a 1 MiB frame and drip
/// it for ever, holding the buffer. A late frame gets close 1008 and the connection ends. Sits just ahead of
/// the frame decoder, so it sees every byte the decoder sees (also what arrived with the upgrade request),
/// and reads only frame lengths (`FrameBoundary`). The clock stops while the socket handler holds the
/// connection's reads (`holdReads`: its lanes are full, so the edge is behind, not the client) and starts
/// again from zero when it reads on (`resumeReads`): a frame the edge left half-read is not the client's fault.
final class FrameDeadline: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let limit: TimeAmount
    private let expired: @Sendable () -> Void
    private var boundary = FrameBoundary()
    private var timer: Scheduled<Void>?
    /// A frame began and has not ended: its clock runs, or waits while reads are held.
    private var frameOpen = false
    private var readsHeld = false
    private var context: ChannelHandlerContext?

    /// `expired` is called when a frame runs out of time (to count it).
    init(limit: TimeAmount, expired: @escaping @Sendable () -> Void = {}) {
        self.limit = limit
        self.expired = expired
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let (began, finished) = boundary.consume(unwrapInboundIn(data).readableBytesView)
        if finished {
            frameOpen = false
            timer?.cancel()
            timer = nil
        } else if began > 0 || !frameOpen {
            // A new frame is open at the end of this read: its own clock starts now (once reads go on, if held).
            frameOpen = true
            if !readsHeld { arm(context: context) }
        }
        context.fireChannelRead(data)
    }

    /// The socket handler stopped asking for bytes (on this channel's loop).
    func holdReads() {
        readsHeld = true
        timer?.cancel()
        timer = nil
    }

    /// The socket handler asks for bytes again: an open frame gets its whole limit from now.
    func resumeReads() {
        guard readsHeld else { return }
        readsHeld = false
        if frameOpen, let context { arm(context: context) }
    }

    /// Told to the handlers behind this one when a frame ran out of time and the connection is being closed.
    struct Expired {}

    private func arm(context: ChannelHandlerContext) {
        timer?.cancel()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let expired = self.expired
        timer = context.eventLoop.scheduleTask(in: limit) {
            expired()
            // The socket handler stops writing and does not count this close again (as a failed connection).
            bound.value.fireUserInboundEventTriggered(Expired())
            // Toward the socket through the frame encoder (ahead of this handler), past everything that waits
            // on the frame the decoder still holds.
            let context = bound.value
            let channel = context.channel
            var reason = channel.allocator.buffer(capacity: 16)
            reason.write(webSocketErrorCode: .policyViolation)
            reason.writeString("frame too slow")
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)
            context.writeAndFlush(NIOAny(close)).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
