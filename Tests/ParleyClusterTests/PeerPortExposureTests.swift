import NIOCore
import NIOPosix
import Testing
import ParleyCluster

/// A raw TCP client of the peer port: writes what a test gives it until the node closes the connection.
private final class RawPeerClient: @unchecked Sendable {
    let channel: Channel

    init(port: Int, group: EventLoopGroup) async throws {
        channel = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get()
    }

    /// Writes `chunks` one after another; stops at the first failed write. Returns the bytes the socket took.
    func write(_ chunks: some Sequence<ByteBuffer>) async -> Int {
        var written = 0
        for chunk in chunks {
            do {
                try await channel.writeAndFlush(chunk).get()
                written += chunk.readableBytes
            } catch {
                break
            }
        }
        return written
    }

    /// Whether the node closed the connection within `seconds`.
    func closed(within seconds: Double) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while channel.isActive, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return !channel.isActive
    }
}

private func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32, payload: Int) -> ByteBuffer {
    var b = ByteBuffer()
    b.writeInteger(UInt8(payload >> 16)); b.writeInteger(UInt16(payload & 0xFFFF))
    b.writeInteger(type); b.writeInteger(flags); b.writeInteger(stream)
    b.writeRepeatingByte(0x40, count: payload)
    return b
}

private let preface = ByteBuffer(string: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

/// SPEC A9 / issues 23 and 24: what an unauthenticated client can make the peer port hold.
@Suite(.serialized) struct PeerPortExposureTests {
    @Test func connectionsThatNeverAuthenticateAreClosedAtTheDeadlineAndRealPeersStay() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let b = try await makeTransport(2, authDeadline: .milliseconds(600), inbox: Inbox(), group: group)
        let a = try await makeTransport(1, inbox: Inbox(), group: group)
        await a.setPeers([2: ("127.0.0.1", b.port)])
        let silent = try await RawPeerClient(port: b.port, group: group)
        let halfPreface = try await RawPeerClient(port: b.port, group: group)
        _ = await halfPreface.write([preface.getSlice(at: 0, length: 10)!])
        let settingsOnly = try await RawPeerClient(port: b.port, group: group)
        _ = await settingsOnly.write([preface, frame(type: 4, stream: 0, payload: 0)])
        for (name, client) in [("silent", silent), ("half a preface", halfPreface), ("preface + SETTINGS", settingsOnly)] {
            #expect(await client.closed(within: 3), "\(name): still open after the deadline")
        }
        // A real peer authenticated its streams and is still connected, with no failure since.
        let link = try #require(await a.linkStatus().first)
        #expect(link.connected && link.connectFailures == 0, "\(link)")
        await a.shutdown(); await b.shutdown()
        try await group.shutdownGracefully()
    }

    /// After a protocol error the node stops reading: a client that goes on sending gets only what the
    /// socket buffers held before the close (it used to be read and buffered without end).
    @Test func aProtocolErrorStopsReadingAndClosesTheConnection() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let b = try await makeTransport(2, inbox: Inbox(), group: group)
        let chunk = ByteBuffer(repeating: 0x41, count: 1 << 20)
        // A bad preface, then 64 MB.
        let garbage = try await RawPeerClient(port: b.port, group: group)
        let sent = await garbage.write([ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\n")] + Array(repeating: chunk, count: 64))
        #expect(await garbage.closed(within: 3))
        #expect(sent < 24 << 20, "the node took \(sent >> 20) MB after a bad preface")
        // A CONTINUATION flood: HEADERS without END_HEADERS, then CONTINUATION frames without end (48 MB).
        let flood = try await RawPeerClient(port: b.port, group: group)
        let frames = [preface, frame(type: 4, stream: 0, payload: 0), frame(type: 1, stream: 1, payload: 16_000)]
            + Array(repeating: frame(type: 9, stream: 1, payload: 16_000), count: 3000)
        let flooded = await flood.write(frames)
        #expect(await flood.closed(within: 3))
        #expect(flooded < 24 << 20, "the node took \(flooded >> 20) MB of CONTINUATION frames")
        await b.shutdown()
        try await group.shutdownGracefully()
    }
}
