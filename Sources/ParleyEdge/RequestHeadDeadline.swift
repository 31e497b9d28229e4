import NIOCore

/// SPEC A2 at the front of every client-port connection, until it becomes a WebSocket: a request head must
/// be complete (its blank line seen) within `first` of the connection opening, and the next one within
/// `between` of the previous head or of the last bytes the node wrote back, whichever is later (a slow
/// answer on a loaded node does not count against the client). A slow-loris client that drips a head, or
/// parks a half-sent request, or holds an idle keep-alive connection, is closed instead of holding a
/// descriptor for ever. Bodies are read within the same `between` (the server API reads at most 256 KiB,
/// signature first). Removed when the connection upgrades: the WebSocket has its own hello deadline and
/// idle timeout.
final class RequestHeadDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    /// Passed on untouched (never unwrapped): what the HTTP encoder writes.
    typealias OutboundIn = IOData

    static let name = "parley.request-head-deadline"

    private let first: TimeAmount
    private let between: TimeAmount
    private var timer: Scheduled<Void>?
    /// The last bytes of the previous read, to find a blank line split across reads.
    private var tail: [UInt8] = []

    init(first: TimeAmount, between: TimeAmount) {
        self.first = first
        self.between = between
    }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(first, context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let bytes = tail + buffer.readableBytesView
        if Self.holdsBlankLine(bytes) { arm(between, context: context) }
        tail = Array(bytes.suffix(3))
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if timer != nil { arm(between, context: context) }
        context.write(data, promise: promise)
    }

    private func arm(_ delay: TimeAmount, context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: delay) { channel.close(promise: nil) }
    }

    /// Whether `bytes` hold CR LF CR LF (the end of a request head).
    static func holdsBlankLine(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return true
        }
        return false
    }
}
