import NIOCore
import NIOEmbedded
import NIOWebSocket
@testable import ParleyEdge
import Testing

/// `TextFrame` writes RFC 6455 server frames itself (FIN, text, unmasked, 7/16/64-bit lengths): NIO's own
/// frame decoder must read each back as the text it holds, at every length form's edges.
@Suite struct TextFrameTests {
    @Test("a text frame of 0, 125, 126, 65,535, 65,536 and 200,000 bytes reads back through NIO's WebSocket decoder")
    func framesReadBack() throws {
        for length in [0, 1, 125, 126, 127, 65_535, 65_536, 200_000] {
            let text = String(repeating: "é", count: length / 2) + String(repeating: "x", count: length % 2)
            let frame = TextFrame(text)
            #expect(frame.bytes.readableBytes == text.utf8.count + (text.utf8.count < 126 ? 2 : text.utf8.count < 65_536 ? 4 : 10))
            let channel = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
            try channel.writeInbound(frame.bytes)
            let read = try #require(try channel.readInbound(as: WebSocketFrame.self))
            #expect(read.fin && read.opcode == .text && read.maskKey == nil)
            #expect(String(buffer: read.unmaskedData) == text)
            #expect(try channel.finish().isClean)
        }
    }
}
