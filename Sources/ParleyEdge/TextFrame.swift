import NIOCore

/// A whole WebSocket text frame as a server sends it (FIN, opcode 1, unmasked: RFC 6455 §5.2), header and
/// payload in one buffer. A server's frame is the same bytes for every connection, so a room event fanned out
/// to many members is framed once and the one buffer is written to every socket — instead of NIO's
/// `WebSocketFrameEncoder` making a header buffer per connection and the pipeline passing each frame through
/// it (issue 35: that write path was most of an edge loop's user time in the fan-out benchmark).
struct TextFrame: Sendable {
    let bytes: ByteBuffer
    /// D2: set for a low-priority message, which a connection that is behind skips.
    let sheddable: Sheddable?

    /// Framed straight from the text (one buffer, no copy in between).
    init(_ text: String, sheddable: Sheddable? = nil) {
        var out = Self.header(length: text.utf8.count)
        out.writeString(text)
        bytes = out
        self.sheddable = sheddable
    }

    /// A buffer holding the frame's header, with room for the payload after it.
    private static func header(length: Int) -> ByteBuffer {
        var out = ByteBufferAllocator().buffer(capacity: length + 10)
        out.writeInteger(UInt8(0x81))  // FIN, text
        switch length {
        case ..<126:
            out.writeInteger(UInt8(length))
        case ..<65_536:
            out.writeInteger(UInt8(126))
            out.writeInteger(UInt16(length))
        default:
            out.writeInteger(UInt8(127))
            out.writeInteger(UInt64(length))
        }
        return out
    }
}

/// Holds the pipeline position just ahead of the WebSocket frame encoder (toward the socket): the client socket
/// handler writes whole `TextFrame`s there, past the encoder, in order with everything else it writes
/// (every write reaches the socket's queue at once, on the connection's loop).
final class FrameBytesPassage: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    private(set) var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }
}
