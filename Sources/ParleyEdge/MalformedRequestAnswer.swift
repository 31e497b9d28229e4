import NIOCore
import NIOHTTP1

/// Issue 33 (SPEC A2): a request head the HTTP decoder cannot parse — a header block over the decoder's limit,
/// `Content-Length` with `Transfer-Encoding`, two `Content-Length`s, bytes that are no HTTP — is answered 431
/// (too large) or 400 and closed at once. Before, the parser's error reached nothing that answers while the
/// connection waited for its upgrade decision, and the socket stayed open until the keep-alive deadline (30 s).
/// Sits right behind the request decoder until the connection becomes a WebSocket (then it is removed). An
/// error after the connection already answered something (a later keep-alive request) only closes it: the
/// answer cannot be known to be complete.
final class MalformedRequestAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    static let name = "parley.malformed-request-answer"

    private var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        answered = true
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else { return context.fireErrorCaught(error) }
        let channel = context.channel
        guard !answered else {
            channel.close(promise: nil)
            return
        }
        answered = true
        let status: HTTPResponseStatus = parserError == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
        let head = HTTPResponseHead(version: .http1_1, status: status,
                                    headers: ["Connection": "close", "Content-Length": "0"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
