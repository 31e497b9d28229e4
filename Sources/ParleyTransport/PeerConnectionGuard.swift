import NIOCore

/// The last handler of a peer-port connection: what a connection may hold before and after it has proved
/// itself (SPEC A9, issue 23/24).
/// - On any error before the connection has authenticated — an HTTP/2 protocol error after which NIO has
///   sent GOAWAY, a bad preface, an oversized header block — it stops reading at once (nothing more is
///   buffered) and closes after a short linger that lets the GOAWAY leave. A node used to keep such a socket
///   and buffer whatever arrived: three unauthenticated 150 MB sends took one from 186 to 636 MB. Once a
///   stream has authenticated (the peer holds the cluster secret), errors are NIO's to handle as before: NIO
///   reports a stream's error (after its RST_STREAM) here too, as the bare underlying error, and closing the
///   connection for it would drop a healthy peer link.
/// - A connection that has not opened one authenticated stream within `authDeadline` is closed (silent
///   sockets, half prefaces and SETTINGS-only connections used to stay open for good).
/// Confined to the connection's event loop.
final class PeerConnectionGuard: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = Any

    private let authDeadline: TimeAmount
    private let linger: TimeAmount
    private var authenticated = false
    private var deadline: Scheduled<Void>?
    private var closing = false

    init(authDeadline: TimeAmount, linger: TimeAmount = .milliseconds(100)) {
        self.authDeadline = authDeadline
        self.linger = linger
    }

    /// A stream of this connection authenticated (called on the connection's loop by the stream's handler).
    func authenticatedStream() {
        authenticated = true
        deadline?.cancel()
        deadline = nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: authDeadline) { [self] in
            guard !authenticated else { return }
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard !authenticated else { return context.fireErrorCaught(error) }
        guard !closing else { return }
        closing = true
        let channel = context.channel
        channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        context.eventLoop.scheduleTask(in: linger) { channel.close(promise: nil) }
    }
}
