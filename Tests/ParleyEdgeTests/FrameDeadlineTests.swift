import NIOCore
import NIOEmbedded
import NIOWebSocket
@testable import ParleyEdge
import Testing

/// SPEC A2: a frame must arrive whole within the limit of its first byte — counted only while the edge reads.
/// An edge behind on a connection's requests holds its reads (the socket handler's lanes are full); a frame it
/// left half-read meanwhile must not end the connection (a flood of one room's sends on a loaded node was
/// closed "frame too slow" after 10 s, 220 answers 415).
@Suite("Frame deadline")
struct FrameDeadlineTests {
    private func channel(_ deadline: FrameDeadline) throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(deadline)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, loop)
    }

    @Test("A2: a frame the client leaves open past the limit ends the connection")
    func anOpenFrameRunsOut() throws {
        let (channel, loop) = try channel(FrameDeadline(limit: .seconds(10)))
        let frame = FrameBoundaryTests.frame(length: 300)
        try channel.writeInbound(channel.allocator.buffer(bytes: frame[..<100]))
        loop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }

    @Test("A2: a frame left open while the edge holds reads is not closed; its time starts again when reads go on")
    func heldReadsStopTheClock() throws {
        let deadline = FrameDeadline(limit: .seconds(10))
        let (channel, loop) = try channel(deadline)
        let frame = FrameBoundaryTests.frame(length: 300)
        try channel.writeInbound(channel.allocator.buffer(bytes: frame[..<100]))
        loop.advanceTime(by: .seconds(5))
        deadline.holdReads()
        loop.advanceTime(by: .seconds(25))
        #expect(channel.isActive, "closed while the edge held reads")
        deadline.resumeReads()
        loop.advanceTime(by: .seconds(9))
        #expect(channel.isActive, "the frame did not get its whole limit again")
        loop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive, "a frame the client left open past the limit ends the connection")
    }

    @Test("A2: a frame that begins while reads are held is timed from when reads go on; a finished one is not timed")
    func framesBegunWhileHeld() throws {
        let deadline = FrameDeadline(limit: .seconds(10))
        let (channel, loop) = try channel(deadline)
        let frame = FrameBoundaryTests.frame(length: 300)
        // Reads held while the last read of the cycle still came in (NIO reads a cycle's bytes through).
        deadline.holdReads()
        try channel.writeInbound(channel.allocator.buffer(bytes: frame[..<100]))
        loop.advanceTime(by: .seconds(30))
        #expect(channel.isActive)
        deadline.resumeReads()
        try channel.writeInbound(channel.allocator.buffer(bytes: frame[100...]))
        loop.advanceTime(by: .seconds(30))
        #expect(channel.isActive, "a finished frame was still timed")
    }
}
