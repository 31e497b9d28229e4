import NIOCore
import NIOEmbedded
import NIOWebSocket
@testable import ParleyEdge
import Testing

/// SPEC A2: a frame must arrive whole within the limit of its first byte — counted only while the edge asks for
/// bytes. An edge behind on a connection's requests holds its reads; a frame it left open meanwhile must not
/// end the connection (a flood of one room's sends on a loaded node was closed "frame too slow" after 10 s).
@Suite("Frame deadline")
struct FrameDeadlineTests {
    /// Stands for the socket handler: passes reads on only when told.
    final class ReadGate: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var open = true
        var waiting = false
        func read(context: ChannelHandlerContext) {
            if open { context.read() } else { waiting = true }
        }
    }

    @Test("A2: a frame left open while the edge holds reads is not closed; one the client leaves open is")
    func heldReadsStopTheClock() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let gate = ReadGate()
        try channel.pipeline.syncOperations.addHandler(FrameDeadline(limit: .seconds(10), expired: { }))
        try channel.pipeline.syncOperations.addHandler(gate)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let frame = FrameBoundaryTests.frame(length: 300)
        // The edge is behind: it holds reads after the first half of a frame came.
        gate.open = false
        try channel.writeInbound(channel.allocator.buffer(bytes: frame[..<100]))
        channel.read()
        loop.advanceTime(by: .seconds(25))
        #expect(channel.isActive, "closed while the edge held reads")
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil, "a close frame was sent")
        // The edge reads again: the frame's time starts now, and the client leaves it open.
        gate.open = true
        channel.read()
        loop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive, "a frame the client left open past the limit ends the connection")
    }
}
