import NIOCore
import NIOEmbedded
import Testing
@testable import ParleyCluster
@testable import ParleyTransport

/// The guard's rule on its own: before authentication any error closes the connection (after a short
/// linger); after it, errors pass on (NIO reports a single stream's error on the connection too), and the
/// authentication deadline closes only a connection that never authenticated.
@Suite struct PeerConnectionGuardTests {
    struct StreamReset: Error {}

    func channel(deadline: TimeAmount = .seconds(5)) throws -> (EmbeddedChannel, PeerConnectionGuard) {
        let guardian = PeerConnectionGuard(authDeadline: deadline, linger: .milliseconds(100))
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(guardian)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, guardian)
    }

    @Test func anErrorBeforeAuthenticationClosesAfterTheLinger() throws {
        let (channel, _) = try channel()
        channel.pipeline.fireErrorCaught(StreamReset())
        #expect(channel.isActive, "the GOAWAY gets its linger")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        #expect(!channel.isActive)
    }

    @Test func anErrorAfterAuthenticationLeavesTheConnectionOpen() throws {
        let (channel, guardian) = try channel()
        guardian.authenticatedStream()
        channel.pipeline.fireErrorCaught(StreamReset())
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(channel.isActive, "a stream's error must not drop an authenticated peer link")
        _ = try? channel.finish()
    }

    @Test func theDeadlineClosesOnlyAConnectionThatNeverAuthenticated() throws {
        let (silent, _) = try channel(deadline: .seconds(5))
        silent.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!silent.isActive)
        let (peer, guardian) = try channel(deadline: .seconds(5))
        peer.embeddedEventLoop.advanceTime(by: .seconds(1))
        guardian.authenticatedStream()
        peer.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(peer.isActive)
        _ = try? peer.finish()
    }
}
