import Foundation
import ParleyCluster
import NIOCore
@testable import ParleyEdge
import ParleyRooms
import ParleyTestSupport
import Prometheus
import Testing

/// SPEC D2 and D3 over real WebSockets: a message's priority, a room's delivered-rate ceiling per edge (low shed
/// first, high never), and a connection that is behind skipping low-priority events before it is closed; in
/// both cases the client is told what it did not get by seq (`shed`), and every other message reaches it.
@Suite("Delivery priority")
struct DeliveryPriorityTests {
    private static func send(_ server: EdgeServer, _ body: String, _ priority: MessagePriority) async throws -> UInt64 {
        let outcome = try await server.cluster.submit(
            .sendMessage(SendMessage(roomId: "r1", body: body, fromUser: "alice", priority: priority)),
            shard: server.cluster.shard(ofRoom: "r1"), actor: .appServer)
        guard case .success(.messageSent(let seq, _, _)) = outcome.result else {
            throw EdgeTestError.unexpected("send refused: \(outcome.result)")
        }
        return seq
    }

    /// Every seq the `shed` events name.
    private static func shedSeqs(_ events: [JSONValue], reason: String) -> Set<UInt64> {
        var seqs: Set<UInt64> = []
        for e in events where e["event"] == .string("shed") && e["data"]?["reason"] == .string(reason) {
            guard case .array(let ranges)? = e["data"]?["ranges"] else { continue }
            for r in ranges {
                guard case .array(let pair) = r, pair.count == 2, let from = pair[0].int, let to = pair[1].int,
                      from <= to else { continue }
                for s in from...to { seqs.insert(UInt64(s)) }
            }
        }
        return seqs
    }

    @Test("D3: a client's priority reaches the room's event (absent when normal); an unknown one is 414 and stores nothing")
    func aClientSetsItsMessagesPriority() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let (alice, bob) = try await server.aliceAndBobInRoom()
        _ = try await bob.drainEvents()
        for name in ["high", "low", "normal"] {
            let answer = try await alice.call("sendMessage", ["roomId": "r1", "body": name, "priority": name])
            #expect(answer["ok"] == .bool(true), "\(answer)")
            let event = try await bob.event("message") { $0["data"]?["body"] == .string(name) }
            #expect(event["data"]?["priority"] == (name == "normal" ? nil : .string(name)), "\(event)")
        }
        let refused = try await alice.call("sendMessage", ["roomId": "r1", "body": "urgent", "priority": "urgent"])
        #expect(refused["ok"] == .bool(false) && refused["error"]?["code"]?.int == 414, "\(refused)")
        let wrongType = try await alice.call("sendMessage", ["roomId": "r1", "body": "one", "priority": 1])
        #expect(wrongType["ok"] == .bool(false), "\(wrongType)")
        let history = try await alice.call("fetchHistory", ["roomId": "r1", "limit": 10])
        guard case .array(let items)? = history["data"]?["messages"] else { Issue.record("no history: \(history)"); return }
        let bodies = items.compactMap { $0["body"]?.string }
        #expect(!bodies.contains("urgent") && !bodies.contains("one"), "\(bodies)")
        let low = items.first { $0["body"] == .string("low") }
        #expect(low?["priority"] == .string("low"), "history keeps the priority: \(String(describing: low))")
        await alice.close(); await bob.close()
    }

    @Test("D3: above its app's ceiling an edge sheds low first, then normal, never high; its clients are told every shed seq")
    func aRoomAboveItsCeilingShedsLowFirstAndNeverHigh() async throws {
        let registry = PrometheusCollectorRegistry()
        let server = try await Fixture.server(metrics: EdgeMetrics(factory: PrometheusMetricsFactory(registry: registry)))
        defer { Task { await server.stop() } }
        #expect(server.cluster.meta(.setRoomCeiling(appKey: Fixture.app, messagesPerSecond: 5)) == .done)
        let bob = try await server.client()
        try await bob.enter("bob")  // the enter reads the app's limits
        _ = try await bob.drainEvents()

        // 60 messages at once, far above 5 a second: 10 high, 20 normal, 30 low, interleaved.
        var sent: [UInt64: MessagePriority] = [:]
        for i in 0..<60 {
            let priority: MessagePriority = i % 6 == 0 ? .high : i % 6 < 3 ? .normal : .low
            sent[try await Self.send(server, "m\(i)", priority)] = priority
        }
        // The notice comes before the room's next event, or a second after the first shed message: read until every
        // message arrived or was named (bounded: 20 s, for a runner busy with every other suite).
        var events: [JSONValue] = []
        var delivered: Set<UInt64> = [], shed: Set<UInt64> = []
        let readUntil = ContinuousClock.now + .seconds(20)
        while delivered.union(shed) != Set(sent.keys), ContinuousClock.now < readUntil {
            events += try await bob.drainEvents(after: .milliseconds(500))
            delivered = Set(events.filter { $0["event"] == .string("message") }.compactMap { $0["seq"]?.int }.map(UInt64.init))
            shed = Self.shedSeqs(events, reason: "rate")
        }
        let of = { (p: MessagePriority) in sent.filter { $0.value == p }.map(\.key) }
        #expect(of(.high).allSatisfy(delivered.contains), "every high message arrives")
        #expect(shed.isDisjoint(with: of(.high)), "no high message is shed")
        #expect(shed.isDisjoint(with: delivered), "a shed message is not delivered as well")
        #expect(delivered.union(shed) == Set(sent.keys), "every message is delivered or named as shed")
        // Low goes first: fewer low than normal get through (the bucket must be half full for a low one).
        let lowThrough = of(.low).filter(delivered.contains).count, normalThrough = of(.normal).filter(delivered.contains).count
        #expect(lowThrough < normalThrough, "low \(lowThrough) normal \(normalThrough)")
        #expect(delivered.count < 30, "the ceiling held: \(delivered.count) of 60 delivered")
        #expect(registry.text.contains(#"parley_edge_shed_total{reason="rate"} \#(shed.count)"#), "\(registry.text)")

        // History still has every message (shedding is per edge and delivery only).
        let page = try await bob.call("fetchHistory", ["roomId": "r1", "limit": 100])
        guard case .array(let items)? = page["data"]?["messages"] else { Issue.record("no history: \(page)"); return }
        let stored = Set(items.compactMap { $0["seq"]?.int }.map(UInt64.init))
        #expect(stored.isSuperset(of: Set(sent.keys)))
        await bob.close()
    }

    @Test("D2: a connection that is behind skips low events first, is told their seqs when it catches up, and gets every other one; the room does not wait")
    func aSlowConnectionSkipsLowEventsFirst() async throws {
        var settings = EdgeSettings.testing
        settings.maxQueuedBytes = 256 << 10
        let registry = PrometheusCollectorRegistry()
        let server = try await Fixture.server(settings: settings,
                                              metrics: EdgeMetrics(factory: PrometheusMetricsFactory(registry: registry)))
        defer { Task { await server.stop() } }
        let carol = try await server.client()
        try await carol.enter("carol")
        let stalled = try StalledClient(port: server.port)
        try stalled.send(json: ["id": 1, "op": "hello", "versions": [1]])
        try stalled.send(json: ["id": 2, "op": "enter", "roomId": "r1", "auth": Fixture.auth("bob"), "nickname": "Bob"])
        // bob's enter answered (applied) before the room speaks: later messages are his.
        _ = try await offThePool { try stalled.readFrames(until: #""id":2"#) }

        // Big low messages fill what the kernel and the edge hold for bob; a small normal one every tenth stays
        // far inside the bound. Bounded: 3,000 messages (12 MB of low) at most.
        let body = String(repeating: "x", count: 4000)
        var sent: [UInt64: MessagePriority] = [:]
        func skipped() -> Int {
            Int(registry.text.split(separator: "\n").first { $0.hasPrefix(#"parley_edge_shed_total{reason="slow"}"#) }?
                .split(separator: " ").last ?? "0") ?? 0
        }
        var i = 0
        while i < 3000, skipped() < 50 {
            let normal = i % 10 == 0
            sent[try await Self.send(server, normal ? "n\(i)" : "\(i) \(body)", normal ? .normal : .low)] = normal ? .normal : .low
            i += 1
            if i % 50 == 0 { try await Task.sleep(for: .milliseconds(50)) }  // lets the feed catch up
        }
        #expect(skipped() >= 50, "bob never fell behind after \(i) messages")
        #expect(await server.edge.counts.connections == 2, "bob was closed though only low events were past the bound")
        // carol, reading, got every message in order meanwhile.
        let last = sent.keys.max()!
        var carolSeqs: [UInt64] = []
        while carolSeqs.last ?? 0 < last {
            let m = try await carol.event("message", timeout: .seconds(10))
            carolSeqs.append(UInt64(m["seq"]?.int ?? 0))
        }
        #expect(carolSeqs == sent.keys.sorted(), "carol's messages: \(carolSeqs.count) of \(sent.count)")

        // bob reads again: what he got, and the `shed` notice once he caught up.
        // Until every message arrived or was named as skipped (bounded: 30 s).
        var events: [JSONValue] = []
        var delivered: Set<UInt64> = [], shed: Set<UInt64> = []
        let readUntil = ContinuousClock.now + .seconds(30)
        while !delivered.union(shed).isSuperset(of: sent.keys), ContinuousClock.now < readUntil {
            events += try await offThePool { try stalled.readFrames(quietFor: .milliseconds(500)) }.compactMap { JSONValue.parse($0) }
            delivered = Set(events.filter { $0["event"] == .string("message") }.compactMap { $0["seq"]?.int }.map(UInt64.init))
            shed = Self.shedSeqs(events, reason: "slow")
        }
        let normals = sent.filter { $0.value == .normal }.map(\.key)
        #expect(normals.allSatisfy(delivered.contains), "every normal message reached bob: \(normals.filter { !delivered.contains($0) }.count) missing")
        let missing = Set(sent.keys).subtracting(delivered.union(shed)).sorted()
        #expect(missing.isEmpty, "neither delivered nor named as skipped: \(missing.count) of \(sent.count), first \(missing.prefix(10)); \(events.count) frames read, kinds \(Dictionary(grouping: events, by: { $0["event"]?.string ?? "answer" }).mapValues(\.count)), seqs \(events.compactMap { $0["seq"]?.int }.prefix(20)), the third: \(events.dropFirst(2).prefix(1)); sheds: \(events.filter { $0["event"] == .string("shed") })")
        #expect(shed.count >= 50, "bob was told of \(shed.count) skipped seqs")
        #expect(!registry.text.contains(#"parley_edge_closes_total{reason="tooSlow"} 1"#), "\(registry.text)")
    }

    @Test("D2: past its whole bound a connection is closed 1008 even with nothing low to skip; it resumes from the last seq it got")
    func aConnectionPastItsBoundIsClosedAndResumes() async throws {
        var settings = EdgeSettings.testing
        settings.maxQueuedBytes = 32 << 10
        settings.maxResumeEvents = 100_000  // what the kernel held when the edge gave up is all replayed
        let server = try await Fixture.server(settings: settings)
        defer { Task { await server.stop() } }
        let stalled = try StalledClient(port: server.port)
        try stalled.send(json: ["id": 1, "op": "hello", "versions": [1]])
        try stalled.send(json: ["id": 2, "op": "enter", "roomId": "r1", "auth": Fixture.auth("bob"), "nickname": "Bob"])
        _ = try await offThePool { try stalled.readFrames(until: #""id":2"#) }
        let body = String(repeating: "y", count: 4000)
        var sent: [UInt64] = []
        while await server.edge.counts.connections == 1, sent.count < 3000 {
            sent.append(try await Self.send(server, "\(sent.count) \(body)", .high))
            if sent.count % 50 == 0 { try await Task.sleep(for: .milliseconds(50)) }
        }
        try await eventually { await server.edge.counts.connections == 0 }
        let bytes = try await offThePool { try stalled.readBytesToEnd() }
        let frames = StalledClient.serverFrames(bytes)
        let got = frames.compactMap { JSONValue.parse($0) }.filter { $0["event"] == .string("message") }
            .compactMap { $0["seq"]?.int }.map(UInt64.init)
        let closeCode = StalledClient.closeCode(bytes)
        #expect(closeCode == nil || closeCode == 1008, "close \(String(describing: closeCode))")
        // The resume point is the last seq the client holds: a new connection resumes from it without a hole.
        let resumeFrom = got.max() ?? 0
        let again = try await server.client()
        let answer = try await again.enter("bob", extra: ["lastSeq": resumeFrom])
        #expect(answer["data"]?["resumed"] == .bool(true), "\(answer)")
        var seqs: [UInt64] = []
        while seqs.last ?? resumeFrom < sent.last! {
            let m = try await again.event("message", timeout: .seconds(10))
            seqs.append(UInt64(m["seq"]?.int ?? 0))
        }
        #expect(seqs == sent.filter { $0 > resumeFrom }, "a hole or a duplicate")
        await again.close()
    }
}

/// The two small pieces under D2 and D3 on their own.
@Suite struct SheddingPiecesTests {
    @Test("D3: the ceiling's bucket lets a second's worth through, low only while it is half full, high always")
    func theBucket() {
        var rate = RoomDeliveryRate()
        let t0: UInt64 = 1_000_000_000
        // Ten a second: a burst of ten, of which low takes only the first half.
        var low = 0, normal = 0, high = 0
        for i in 0..<30 {
            switch i % 3 {
            case 0: if rate.admits(.low, ceiling: 10, nowNanoseconds: t0) { low += 1 }
            case 1: if rate.admits(.normal, ceiling: 10, nowNanoseconds: t0) { normal += 1 }
            default: if rate.admits(.high, ceiling: 10, nowNanoseconds: t0) { high += 1 }
            }
        }
        #expect(high == 10 && low + normal + high <= 10 + 10 && low < normal, "low \(low) normal \(normal) high \(high)")
        // A second later the bucket is full again.
        let later = rate.admits(.low, ceiling: 10, nowNanoseconds: t0 + 3_000_000_000)
        #expect(later)
        // Time is the messages' own: at a ceiling of 1 a second, messages stamped a second apart all pass however
        // late (and however bunched) the edge reads them; one stamped earlier than the last refills nothing.
        var paced = RoomDeliveryRate()
        let passed = (0..<10).filter { paced.admits(.normal, ceiling: 1, nowNanoseconds: t0 + UInt64($0) * 1_000_000_000) }
        #expect(passed.count == 10)
        let earlier = paced.admits(.normal, ceiling: 1, nowNanoseconds: t0)
        #expect(!earlier)
    }

    @Test("D2 D3: shed seqs merge into ranges per room, and a room holds a bounded number of them")
    func shedRanges() {
        var shed = ShedSeqs()
        for seq: UInt64 in [3, 4, 5, 9, 11, 12] { shed.add(roomId: "r1", seq: seq) }
        shed.add(roomId: "r2", seq: 7)
        shed.add(roomId: "r1", seq: 4)  // not again
        let frames = shed.takeFrames(reason: "slow").map { String(buffer: $0.bytes.getSlice(at: 2, length: $0.bytes.readableBytes - 2)!) }
        #expect(frames.count == 2 && shed.isEmpty)
        #expect(frames[0].contains(#""roomId":"r1""#) && frames[0].contains(#""ranges":[[3,5],[9,9],[11,12]]"#), "\(frames[0])")
        #expect(frames[1].contains(#""ranges":[[7,7]]"#) && frames[1].contains(#""reason":"slow""#), "\(frames[1])")
        for seq in stride(from: UInt64(1), through: 1000, by: 2) { shed.add(roomId: "r1", seq: seq) }
        let bounded = shed.takeFrames(reason: "rate").map { String(buffer: $0.bytes.getSlice(at: 4, length: $0.bytes.readableBytes - 4)!) }
        #expect(bounded[0].components(separatedBy: "],[").count == ShedSeqs.maxRanges, "\(bounded[0].suffix(60))")
        #expect(bounded[0].hasSuffix("999]]}}"), "the last range reaches the last seq")
    }
}
