import Foundation
import ParleyTestSupport
import NIOCore
import NIOPosix
import ParleyCluster
import ParleyRaft
import Testing
@testable import ParleyTransport

/// A throwaway cluster CA and node certificates (`TestCertificateAuthority`), as the peer port takes them.
struct TestCertificates {
    let authority: TestCertificateAuthority
    var caPath: String { authority.caPath }

    init() throws {
        authority = try TestCertificateAuthority(label: "parley-tls")
    }

    /// A certificate for `name` signed by this CA (or, with `selfSigned`, by nobody the cluster trusts).
    func node(_ name: String, selfSigned: Bool = false) throws -> PeerTLS {
        let made = try authority.certificate(name, selfSigned: selfSigned)
        return PeerTLS(certificatePath: made.certificate, privateKeyPath: made.key, trustRootsPath: caPath)
    }
}

func makeTLSTransport(_ id: NodeID, tls: PeerTLS?, inbox: Inbox, group: EventLoopGroup) async throws -> PeerTransport {
    var config = PeerTransport.Config(nodeID: id, port: 0, secret: "s3cret")
    config.tls = tls
    return try await PeerTransport(config: config, group: group, onRaft: { inbox.add($0, $1) }, onRequest: { request, loop in
        loop.makeSucceededFuture(PeerResponse(status: 200, body: request.body))
    })
}

/// Issue 4: optional mutual TLS on the peer port.
@Suite(.serialized) struct PeerTLSTests {
    @Test func nodesWithCertificatesOfTheClusterCATalkOverTLS() async throws {
        let certs = try TestCertificates()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let inA = Inbox(), inB = Inbox()
        let a = try await makeTLSTransport(1, tls: try certs.node("node-1"), inbox: inA, group: group)
        let b = try await makeTLSTransport(2, tls: try certs.node("node-2"), inbox: inB, group: group)
        await a.setPeers([2: ("127.0.0.1", b.port)])
        await b.setPeers([1: ("127.0.0.1", a.port)])
        for i in 0..<50 { a.send(to: 2, batch(i)) }
        try await inB.wait(for: 50)
        #expect(inB.batches.map(\.1) == (0..<50).map { batch($0) })
        let echo = try await b.call(1, path: "/rpc/v1/echo", body: Array("over tls".utf8)).get()
        #expect(echo.status == 200 && echo.body == Array("over tls".utf8))
        await a.shutdown(); await b.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func aCleartextPeerAndAPeerWithAForeignCertificateAreRefused() async throws {
        let certs = try TestCertificates()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await makeTLSTransport(2, tls: try certs.node("node-2"), inbox: Inbox(), group: group)
        let cleartext = try await makeTLSTransport(1, tls: nil, inbox: Inbox(), group: group)
        await cleartext.setPeers([2: ("127.0.0.1", server.port)])
        await #expect(throws: (any Error).self) { try await cleartext.call(2, path: "/rpc/v1/echo", body: [1]).get() }
        let stranger = try await makeTLSTransport(3, tls: try certs.node("stranger", selfSigned: true), inbox: Inbox(),
                                                  group: group)
        await stranger.setPeers([2: ("127.0.0.1", server.port)])
        await #expect(throws: (any Error).self) { try await stranger.call(2, path: "/rpc/v1/echo", body: [1]).get() }
        // A TLS node does not talk to a cleartext one either.
        let tlsClient = try await makeTLSTransport(4, tls: try certs.node("node-4"), inbox: Inbox(), group: group)
        let plainServer = try await makeTLSTransport(5, tls: nil, inbox: Inbox(), group: group)
        await tlsClient.setPeers([5: ("127.0.0.1", plainServer.port)])
        await #expect(throws: (any Error).self) { try await tlsClient.call(5, path: "/rpc/v1/echo", body: [1]).get() }
        for t in [server, cleartext, stranger, tlsClient, plainServer] { await t.shutdown() }
        try await group.shutdownGracefully()
    }

    @Test func missingFilesStopTheTransportFromStarting() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bad = PeerTLS(certificatePath: "/nonexistent/cert.pem", privateKeyPath: "/nonexistent/key.pem",
                          trustRootsPath: "/nonexistent/ca.pem")
        await #expect(throws: (any Error).self) { _ = try await makeTLSTransport(1, tls: bad, inbox: Inbox(), group: group) }
        try await group.shutdownGracefully()
    }

    /// An HTTP/2 implementation no one here wrote, over TLS with a client certificate.
    @Test func nghttpTalksToATLSPeerPortWithAClusterCertificate() async throws {
        let nghttp = ["/usr/bin/nghttp", "/usr/local/bin/nghttp"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(nghttp, "install nghttp2-client (.ci/run does) to run this test")
        let certs = try TestCertificates()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await makeTLSTransport(2, tls: try certs.node("node-2"), inbox: Inbox(), group: group)
        let client = try certs.node("tool")
        let ok = try await runTool(path, ["--cert", client.certificatePath, "--key", client.privateKeyPath,
                                       "https://127.0.0.1:\(server.port)/health"])
        // nghttp warns that it cannot verify the server (it does not know the cluster CA), then prints the body.
        #expect(ok.status == 0 && ok.output.hasSuffix("ok"), "\(ok.output)")
        let noCertificate = try await runTool(path, ["https://127.0.0.1:\(server.port)/health"])
        #expect(!noCertificate.output.hasSuffix("ok"), "\(noCertificate.output)")
        await server.shutdown()
        try await group.shutdownGracefully()
    }
}
