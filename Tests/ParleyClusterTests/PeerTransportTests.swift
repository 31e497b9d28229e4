import Foundation
import ParleyTestSupport
import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import ParleyCluster
import ParleyRaft
import Prometheus
@testable import ParleyTransport
import ParleyRaftWire

/// Collects what a transport receives, for assertions from the test.
final class Inbox: Sendable {
    private let box = NIOLockedValueBox<[(NodeID, [RaftEnvelope])]>([])
    func add(_ from: NodeID, _ batch: [RaftEnvelope]) { box.withLockedValue { $0.append((from, batch)) } }
    var batches: [(NodeID, [RaftEnvelope])] { box.withLockedValue { $0 } }

    /// Waits (polling, bounded) until `count` batches arrived.
    func wait(for count: Int, seconds: Double = 10) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while batches.count < count {
            guard Date() < deadline else { throw TransportTestError.timeout("\(batches.count) of \(count) batches") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

enum TransportTestError: Error { case timeout(String) }

func makeTransport(_ id: NodeID, port: Int = 0, secret: String = "s3cret", maxFrame: Int = 64 << 20,
                   queueLimit: Int = 32 << 20, authDeadline: TimeAmount = .seconds(5), inbox: Inbox, group: EventLoopGroup,
                   metrics: any MetricsFactory = NOOPMetricsHandler.instance,
                   logger: Logger = Logger(label: "test.transport")) async throws -> PeerTransport {
    var config = PeerTransport.Config(nodeID: id, port: port, secret: secret)
    config.maxFrameBytes = maxFrame
    config.queueLimitBytes = queueLimit
    config.authDeadline = authDeadline
    return try await PeerTransport(config: config, group: group, onRaft: { inbox.add($0, $1) }, onRequest: { request, loop in
        switch request.path {
        case "/rpc/v1/echo": loop.makeSucceededFuture(PeerResponse(status: 200, body: request.body))
        case "/rpc/v1/whoami": loop.makeSucceededFuture(PeerResponse(status: 200, body: Array("\(request.from)".utf8)))
        default: loop.makeSucceededFuture(PeerResponse(status: 404, body: []))
        }
    }, metrics: metrics, logger: logger)
}

func batch(_ n: Int, group: UInt64 = 1, payload: Int = 64) -> [RaftEnvelope] {
    [RaftEnvelope(group: group, message: Message(kind: .append, from: 1, to: 2, term: 3, index: UInt64(n),
        entries: [Entry(term: 3, index: UInt64(n + 1), data: [UInt8](repeating: UInt8(n % 256), count: payload))]))]
}

@Suite(.serialized) struct PeerTransportTests {
    @Test func batchesAndCallsFlowBetweenTwoNodes() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let inA = Inbox(), inB = Inbox()
        let a = try await makeTransport(1, inbox: inA, group: group)
        let b = try await makeTransport(2, inbox: inB, group: group)
        await a.setPeers([2: ("127.0.0.1", b.port)])
        await b.setPeers([1: ("127.0.0.1", a.port)])
        for i in 0..<100 { a.send(to: 2, batch(i)) }
        try await inB.wait(for: 100)
        #expect(inB.batches.map(\.0) == [NodeID](repeating: 1, count: 100))
        #expect(inB.batches.map(\.1) == (0..<100).map { batch($0) })  // in order, intact
        let big = batch(7, payload: 3 << 20)  // larger than one HTTP/2 frame and the initial window
        b.send(to: 1, big)
        try await inA.wait(for: 1)
        #expect(inA.batches[0].1 == big)
        let echo = try await a.call(2, path: "/rpc/v1/echo", body: Array("ping".utf8)).get()
        #expect(echo.status == 200 && echo.body == Array("ping".utf8))
        let who = try await a.call(2, path: "/rpc/v1/whoami", body: []).get()
        #expect(String(decoding: who.body, as: UTF8.self) == "1")
        await a.shutdown(); await b.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func callsOfOneTickShareADataFrameAndEachGetsItsOwnAnswer() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let a = try await makeTransport(1, inbox: Inbox(), group: group)
        let b = try await makeTransport(2, inbox: Inbox(), group: group)
        await a.setPeers([2: ("127.0.0.1", b.port)])
        await b.setPeers([1: ("127.0.0.1", a.port)])
        _ = try await a.call(2, path: "/rpc/v1/echo", body: [0]).get()  // connected
        // 2,000 calls made on the loop in one go, bodies from 0 bytes to past an HTTP/2 frame (16 KiB), so the
        // coalesced DATA frames split across HTTP/2 frames; answers must match their calls.
        let bodies = (0..<2000).map { i in [UInt8](repeating: UInt8(i % 251), count: i % 7 == 0 ? 20_000 + i : i % 97) }
        let futures = try await group.next().submit { bodies.map { a.call(2, path: "/rpc/v1/echo", body: $0) } }.get()
        for (i, f) in futures.enumerated() {
            let answer = try await f.get()
            #expect(answer.status == 200 && answer.body == bodies[i], "call \(i)")
        }
        let who = try await a.call(2, path: "/rpc/v1/whoami", body: []).get()
        #expect(String(decoding: who.body, as: UTF8.self) == "1")
        await a.shutdown(); await b.shutdown()
        try await group.shutdownGracefully()
    }

    /// The ready loop answers commands, then syncs its write on the same loop; `flushAnswers` sends the
    /// answers before that pause (without it they leave after it, which the control run shows).
    @Test("DESIGN: RPC answers computed before a loop's fsync leave before it")
    func answersLeaveBeforeTheLoopPauses() async throws {
        for flushFirst in [true, false] {
            let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let held = NIOLockedValueBox<EventLoopPromise<PeerResponse>?>(nil)
            let server = try await PeerTransport(
                config: PeerTransport.Config(nodeID: 2, port: 0, secret: "s3cret"), group: serverGroup,
                onRaft: { _, _ in }, onRequest: { _, loop in
                    let promise = loop.makePromise(of: PeerResponse.self)
                    held.withLockedValue { $0 = promise }
                    return promise.futureResult
                })
            let client = try await makeTransport(1, inbox: Inbox(), group: clientGroup)
            await client.setPeers([2: ("127.0.0.1", server.port)])
            let answer = client.call(2, path: "/rpc/v1/held", body: [])
            while held.withLockedValue({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
            let answered = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
            answer.whenSuccess { _ in answered.withLockedValue { $0 = .now } }
            let loop = serverGroup.next()
            let pauseEnded = try await loop.submit {
                held.withLockedValue { $0 }!.succeed(PeerResponse(status: 200, body: [1]))
                if flushFirst { server.flushAnswers(on: loop) }
                Thread.sleep(forTimeInterval: 0.3)  // the cycle's fsync
                return ContinuousClock.now
            }.get()
            #expect(try await answer.get().body == [1])
            let at = try #require(answered.withLockedValue { $0 })
            #expect((at < pauseEnded) == flushFirst, "flushFirst \(flushFirst)")
            await client.shutdown(); await server.shutdown()
            try await serverGroup.shutdownGracefully()
            try await clientGroup.shutdownGracefully()
        }
    }

    /// A peer's health shows on /status whether or not this node has had anything to send it; a link
    /// to a peer that is down keeps trying, and connects once the peer is up.
    @Test func linksConnectBeforeAnythingIsSentAndKeepTrying() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let a = try await makeTransport(1, inbox: Inbox(), group: group)
        let b = try await makeTransport(2, inbox: Inbox(), group: group)
        let probe = try await makeTransport(9, inbox: Inbox(), group: group)  // a free port, left closed
        let port = probe.port
        await probe.shutdown()
        await a.setPeers([2: ("127.0.0.1", b.port), 3: ("127.0.0.1", port)])
        func connected() async -> [NodeID: Bool] {
            Dictionary(uniqueKeysWithValues: await a.linkStatus().map { ($0.peer, $0.connected) })
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while await connected()[2] != true, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(await connected() == [2: true, 3: false])  // nothing was sent to either
        // Issue 15: the down peer's link says why and since when; the up one has no error.
        let down = try #require(await a.linkStatus().first { $0.peer == 3 })
        #expect(down.connectFailures >= 1 && down.secondsSinceConnected == nil)
        #expect(down.lastError?.contains("refused") == true, "\(down.lastError ?? "no error")")
        let up = try #require(await a.linkStatus().first { $0.peer == 2 })
        #expect(up.lastError == nil && up.connectFailures == 0 && up.secondsSinceConnected == 0)
        // Issue 18: node 2 answered with its peer protocol version; node 3, never reached, has none, so a
        // feature every node must read is not used yet.
        #expect(up.peerVersion == PeerProtocol.version && down.peerVersion == nil)
        #expect(await a.everyPeerHas(.sessionTakeOver, among: [1, 2]))
        #expect(!(await a.everyPeerHas(.sessionTakeOver, among: [1, 2, 3])))
        let c = try await makeTransport(3, port: port, inbox: Inbox(), group: group)  // node 3 comes up
        while await connected()[3] != true, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(await connected() == [2: true, 3: true])
        let recovered = try #require(await a.linkStatus().first { $0.peer == 3 })
        #expect(recovered.secondsSinceConnected == 0 && recovered.lastError != nil, "the last error stays for the record")
        await a.shutdown(); await b.shutdown(); await c.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func aPeerWithTheWrongSecretIsRefused() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let inB = Inbox(), inC = Inbox()
        let b = try await makeTransport(2, inbox: inB, group: group)
        let intruder = try await makeTransport(3, secret: "guess", inbox: inC, group: group)
        await intruder.setPeers([2: ("127.0.0.1", b.port)])
        // The stream opened with a bad token is refused (401) and closed: the call fails, nothing runs.
        await #expect(throws: (any Error).self) { try await intruder.call(2, path: "/rpc/v1/echo", body: [1]).get() }
        intruder.send(to: 2, batch(1))
        try await Task.sleep(for: .milliseconds(300))
        #expect(inB.batches.isEmpty)
        // Issue 15: the refused side says why in its status.
        let link = try #require(await intruder.linkStatus().first)
        #expect(!link.connected && link.lastError?.contains("401") == true, "\(link.lastError ?? "no error")")
        await b.shutdown(); await intruder.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func oversizedRequestsAreRefusedWithoutHarm() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let inA = Inbox(), inB = Inbox()
        let b = try await makeTransport(2, maxFrame: 4096, inbox: inB, group: group)
        let a = try await makeTransport(1, inbox: inA, group: group)
        await a.setPeers([2: ("127.0.0.1", b.port)])
        // A call over the receiver's limit resets the RPC stream: that call fails, the next one reconnects.
        await #expect(throws: (any Error).self) {
            try await a.call(2, path: "/rpc/v1/echo", body: [UInt8](repeating: 0, count: 10_000)).get()
        }
        a.send(to: 2, batch(1, payload: 10_000))  // over the receiver's frame limit: the stream is reset
        // Batches written behind it on the reset stream are lost, as on any broken link; Raft resends, and
        // so does this loop, until the reconnected link delivers.
        for _ in 0..<50 where inB.batches.isEmpty {
            a.send(to: 2, batch(2))
            try await Task.sleep(for: .milliseconds(100))
        }
        try await inB.wait(for: 1)
        #expect(inB.batches.allSatisfy { $0.1 == batch(2) })
        let fine = try await a.call(2, path: "/rpc/v1/echo", body: [1, 2, 3]).get()
        #expect(fine.body == [1, 2, 3])
        await a.shutdown(); await b.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func batchesWaitForAPeerThatIsDownAndTheQueueIsBounded() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let inA = Inbox(), inB = Inbox()
        // Find a free port, then leave it closed until the peer starts.
        let probe = try await makeTransport(9, inbox: Inbox(), group: group)
        let port = probe.port
        await probe.shutdown()
        let registry = PrometheusCollectorRegistry()
        let a = try await makeTransport(1, queueLimit: 20_000, inbox: inA, group: group,
                                        metrics: PrometheusMetricsFactory(registry: registry))
        await a.setPeers([2: ("127.0.0.1", port)])
        for i in 0..<200 { a.send(to: 2, batch(i, payload: 1000)) }  // ~200 KB against a 20 KB queue
        try await Task.sleep(for: .milliseconds(200))
        let status = await a.linkStatus()
        #expect(status.count == 1 && status[0].connected == false)
        #expect(status[0].droppedBatches > 150)
        // /metrics counts the same drops, per peer.
        #expect(registry.emitToString().contains("\(PeerTransport.droppedMetric){peer=\"2\"} \(status[0].droppedBatches)\n"))
        let b = try await makeTransport(2, port: port, inbox: inB, group: group)
        a.send(to: 2, batch(1000))
        try await inB.wait(for: 2)
        // The queued batches arrive one after another: wait for the last one sent before looking at them all.
        let deadline = ContinuousClock.now + .seconds(10)
        while !inB.batches.contains(where: { $0.1[0].message.index == 1000 }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        // The newest batches survived, in order, ending with the one sent after the peer came up.
        let indexes = inB.batches.map { $0.1[0].message.index }
        #expect(indexes.last == 1000 && indexes == indexes.sorted())
        #expect(indexes.count < 30)
        await a.shutdown(); await b.shutdown()
        try await group.shutdownGracefully()
    }

    /// The transport speaks standard HTTP/2: nghttp2's own client (Debian package nghttp2-client) reaches it.
    /// Issue 15: a peer that is down is named in the log with its error once per log period, not once per
    /// retry, and the retries are counted in `parley_transport_connect_failures_total`.
    @Test func aDownPeerIsLoggedOncePerPeriodNotPerRetry() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let log = CapturedLog()
        let registry = PrometheusCollectorRegistry()
        let probe = try await makeTransport(9, inbox: Inbox(), group: group)  // a free port, left closed
        let port = probe.port
        await probe.shutdown()
        let a = try await makeTransport(1, inbox: Inbox(), group: group,
                                        metrics: PrometheusMetricsFactory(registry: registry), logger: log.logger)
        await a.setPeers([3: ("127.0.0.1", port)])
        try await Task.sleep(for: .milliseconds(3500))  // retries at ~0, 50, 150, 350, 750, 1550, 3150 ms
        let status = try #require(await a.linkStatus().first)
        let lines = log.messages.filter { $0.contains("cannot reach peer 3") }
        #expect(status.connectFailures >= 6, "\(status.connectFailures) attempts")
        #expect((1...2).contains(lines.count), "one line, then one after the first period (2 s): \(lines)")
        #expect(lines.first?.contains("refused") == true && lines.first?.contains("127.0.0.1:\(port)") == true)
        var text: [UInt8] = []
        registry.emit(into: &text)
        #expect(String(decoding: text, as: UTF8.self)
            .contains("parley_transport_connect_failures_total{peer=\"3\"} \(status.connectFailures)"))
        await a.shutdown()
        try await group.shutdownGracefully()
    }

    /// Issue 18: a stream names its peer protocol version; one this node cannot talk to is refused (426)
    /// before anything is read, one without the header is an older node (version 1) and is served, and the
    /// answer carries this node's version.
    @Test func aPeerOfAVersionThisNodeDoesNotTalkToIsRefused() async throws {
        let nghttp = ["/usr/bin/nghttp", "/usr/local/bin/nghttp"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(nghttp, "install nghttp2-client (.ci/run does) to run this test")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let b = try await makeTransport(2, inbox: Inbox(), group: group)
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("nghttp-\(UUID().uuidString)")
        try Data("x".utf8).write(to: data)
        func call(version: String?) async throws -> String {
            let credential = PeerAuth(secret: "s3cret").headers(from: 5, to: 2, path: "/rpc/v1/whoami").flatMap { ["-H", "\($0.0): \($0.1)"] }
            let header = version.map { ["-H", "\(PeerProtocol.header): \($0)"] } ?? []
            return try await runTool(path, ["-v", "-d", data.path] + credential + header + ["http://127.0.0.1:\(b.port)/rpc/v1/whoami"]).output
        }
        let ancient = try await call(version: "0")
        #expect(ancient.contains(":status: 426") && ancient.contains("upgrade one version at a time"), "\(ancient.suffix(400))")
        let garbage = try await call(version: "two")
        #expect(garbage.contains(":status: 426"), "\(garbage.suffix(400))")
        let older = try await call(version: nil)
        #expect(older.contains(":status: 200"), "an older node (no header) is served: \(older.suffix(300))")
        let same = try await call(version: "\(PeerProtocol.version)")
        #expect(same.contains(":status: 200"), "\(same.suffix(300))")
        // A Raft stream's acceptance names this node's version (what a peer's link records).
        let credential = PeerAuth(secret: "s3cret").headers(from: 5, to: 2, path: "/raft/v1/stream").flatMap { ["-H", "\($0.0): \($0.1)"] }
        let raft = try await runTool(path, ["-v", "-t", "2", "-d", data.path] + credential + ["http://127.0.0.1:\(b.port)/raft/v1/stream"]).output
        #expect(raft.contains("\(PeerProtocol.header): \(PeerProtocol.version)"), "\(raft.suffix(600))")
        await b.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func nghttpTalksToThePeerPort() async throws {
        let nghttp = ["/usr/bin/nghttp", "/usr/local/bin/nghttp"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(nghttp, "install nghttp2-client (.ci/run does) to run this test")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let inB = Inbox()
        let b = try await makeTransport(2, inbox: inB, group: group)
        let health = try await runTool(path, ["-n", "http://127.0.0.1:\(b.port)/health"])  // -n: print nothing
        #expect(health.status == 0)
        let body = try await runTool(path, ["http://127.0.0.1:\(b.port)/health"])
        #expect(body.output == "ok")
        let credential = PeerAuth(secret: "s3cret").headers(from: 5, to: 2, path: "/rpc/v1/whoami")
            .flatMap { ["-H", "\($0.0): \($0.1)"] }
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("nghttp-\(UUID().uuidString)")
        try Data("x".utf8).write(to: data)
        let who = try await runTool(path, ["-d", data.path] + credential + ["http://127.0.0.1:\(b.port)/rpc/v1/whoami"])
        #expect(who.output == "5")
        // The same credential again (A3): refused, it was used once.
        let again = try await runTool(path, ["-v", "-d", data.path] + credential + ["http://127.0.0.1:\(b.port)/rpc/v1/whoami"])
        #expect(again.output.contains(":status: 401") && again.output.contains("replayed"), "\(again.output.suffix(400))")
        let forged = credential.map { $0.hasPrefix("x-parley-auth") ? "x-parley-auth: \(String(repeating: "0", count: 64))" : $0 }
        let refused = try await runTool(path, ["-v", "-d", data.path] + forged + ["http://127.0.0.1:\(b.port)/rpc/v1/whoami"])
        #expect(refused.output.contains(":status: 401"))
        await b.shutdown()
        try await group.shutdownGracefully()
    }
}
