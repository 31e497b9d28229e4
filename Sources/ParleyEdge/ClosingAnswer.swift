import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// An answer that says `Connection: close` ends the connection as soon as it is written (issue 24). The HTTP
/// loop would otherwise read and drop the rest of the request's body (250 KiB each from a crowd of forged
/// requests held 70 MB and every socket for the 30 s keep-alive deadline) and then wait for the client to
/// close. Sits between the async channel and the HTTP codec, so it sees whole response parts.
final class ClosingAnswer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var closing = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            closing = response.headerFields[.connection]?.lowercased() == "close"
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closing else { return context.write(data, promise: promise) }
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            context.writeAndFlush(data, promise: written)
        }
    }
}
