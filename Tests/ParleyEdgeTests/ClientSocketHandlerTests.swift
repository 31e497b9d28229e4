import NIOCore
import NIOEmbedded
@testable import ParleyEdge
import Testing

/// The socket handler's timers hold it strongly (a weak reference would give it a side table, and every retain
/// of it per delivery would take the slow path): closing the connection must still let it go.
@Suite("Client socket handler")
struct ClientSocketHandlerTests {
    @Test("a closed connection's handler is freed: its idle timer does not keep it")
    func aClosedHandlerIsFreed() throws {
        let loop = EmbeddedEventLoop()
        weak var released: ClientSocketHandler?
        do {
            let channel = EmbeddedChannel(loop: loop)
            let handler = ClientSocketHandler(mode: .echo, maxMessageBytes: 1024, idleTimeout: .seconds(75),
                                              passage: FrameBytesPassage())
            released = handler
            try channel.pipeline.syncOperations.addHandler(handler)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            loop.advanceTime(by: .seconds(1))
            try channel.close().wait()
            loop.run()
        }
        #expect(released == nil, "the closed connection's handler is still held (a timer not cancelled?)")
    }
}
