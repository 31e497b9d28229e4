import Foundation
import Testing
import ParleyClient
import ParleyCluster
import ParleyRooms

/// SPEC A1 on real `parley node` processes, through the Swift SDK: a hostile member floods a room while
/// another keeps talking at 5 messages a second.
@Suite(.serialized, .timeLimit(.minutes(4))) struct AbuseTests {
    static let app = "abuse-app"

    /// The flooder (8 sends in flight, as fast as the cluster answers, for 6 s) gets 416 with `retryAfterMs`
    /// beyond its budget (10 a second, bursts of 20: the defaults), and nothing over it reaches the room;
    /// the other member's sends all succeed and none is refused.
    @Test func A1_aFloodingMemberIsHeldToItsBudgetAndTheOthersKeepTalking() async throws {
        try await withLocalCluster { cluster in
        let room = "flooded"
        try cluster.startAll()
        try await cluster.waitForLeaders()
        try await cluster.meta(.putApp(cluster.secrets.app(Self.app, secret: String(repeating: "a", count: 32))))
        for u in ["fred", "sue"] { try await cluster.meta(.putUser(cluster.secrets.user(appKey: Self.app, account: u, token: "tok-\(u)"))) }
        let scoped = AppScope.scoped(room, in: Self.app)
        _ = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: "sue", name: "F")), room: scoped, via: 1)
        func client(_ user: String, via node: UInt64) async throws -> ChatroomClient {
            let c = ChatroomClient(configuration: .addresses([cluster.clientAddress(node)]))
            try await c.enterChatroom(ChatroomEnterRequest(
                roomId: room, auth: .independent(appKey: Self.app, account: user, token: "tok-\(user)"), nickname: user))
            return c
        }
        let fred = try await client("fred", via: 1), sue = try await client("sue", via: 2)
        let heard = FaultEventRecorder(sue)
        func steady(_ count: Int, tag: String) async throws -> [Double] {
            var latencies: [Double] = []
            for i in 0..<count {
                let start = ContinuousClock.now
                _ = try await sue.sendMessage(room, body: "\(tag)-\(i)")
                latencies.append(Double((ContinuousClock.now - start).components.attoseconds) / 1e15
                                 + Double((ContinuousClock.now - start).components.seconds) * 1000)
                try await Task.sleep(for: .milliseconds(200))
            }
            return latencies.sorted()
        }
        let quiet = try await steady(10, tag: "quiet")
        let floodSeconds = 6.0
        let floodBegan = ContinuousClock.now
        let flood = Task { () -> (ok: Int, limited: Int, waits: [Int64]) in
            let end = Date().addingTimeInterval(floodSeconds)
            return await withTaskGroup(of: (Int, Int, [Int64]).self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        var ok = 0, limited = 0, waits: [Int64] = []
                        var i = 0
                        while Date() < end {
                            i += 1
                            do {
                                _ = try await fred.sendMessage(room, body: "flood-\(lane)-\(i)")
                                ok += 1
                            } catch let error as ChatroomError where error.code == ChatroomError.rateLimited {
                                limited += 1
                                if let wait = error.retryAfterMs { waits.append(wait) }
                            } catch {}
                        }
                        return (ok, limited, waits)
                    }
                }
                var total = (ok: 0, limited: 0, waits: [Int64]())
                for await (ok, limited, waits) in group {
                    total.ok += ok
                    total.limited += limited
                    total.waits += waits
                }
                return total
            }
        }
        let loaded = try await steady(25, tag: "loaded")
        let flooded = await flood.value
        let floodTook = ContinuousClock.now - floodBegan
        // The budget: a burst of 20, then 10 a second over the time the flood took as this test measured it (its
        // last sends end after `floodSeconds` on a loaded machine), plus one token for the clock between buckets.
        let refill = Int((10 * (Double(floodTook.components.seconds) + Double(floodTook.components.attoseconds) / 1e18)).rounded(.up))
        #expect(flooded.ok <= 20 + refill + 1, "\(flooded.ok) floods got through in \(floodTook)")
        #expect(flooded.limited > 0, "the flood was never refused")
        #expect(!flooded.waits.isEmpty && flooded.waits.allSatisfy { (1...1_000).contains($0) })
        // Nothing refused reached the room: the listener heard exactly the floods that were accepted.
        try await ClientFaultTests.waitFor("the accepted floods to arrive") {
            await heard.messages(in: room).filter { $0.body.hasPrefix("flood-") }.count >= flooded.ok
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(await heard.messages(in: room).filter { $0.body.hasPrefix("flood-") }.count == flooded.ok)
        // The steady member: every send succeeded, none refused (steady throws otherwise): the flooder's budget
        // is its own. Its latency is printed, not asserted: timing belongs in benchmarks (issue 32).
        let quietP99 = quiet.last!, loadedP99 = loaded[Int(Double(loaded.count - 1) * 0.99)]
        print("A1 flood: the steady member's p99 \(Int(loadedP99)) ms under the flood, \(Int(quietP99)) ms before")
        await fred.close(); await sue.close()
        }
    }
}
