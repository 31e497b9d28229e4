import Foundation
import ParleyCluster
import ParleyEdge
import ParleyRooms
import ParleyPlacement
import Testing

/// Issue 35 item 3: a connection's room commands are answered on its own event loop from what that loop knows
/// of its sessions (`ConnectionSessions`), which the edge keeps in step as sessions begin and end.
@Suite("Edge requests on the connection's loop")
struct EdgeLoopTests {
    /// How many times `sendMessage` reached the cluster so far.
    private static func sends(_ server: EdgeServer) -> Int {
        server.cluster.submitted.filter { if case .sendMessage = $0.0 { true } else { false } }.count
    }

    @Test("issue 35: the loop knows the rooms the edge knows — after exit and after a kick, 13100 without asking the cluster")
    func theLoopFollowsTheSessions() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let (a, b) = try await server.aliceAndBobInRoom()
        #expect(try await a.call("authMode", ["roomId": "r1"])["data"]?["authMode"] == .string("independent"))
        #expect(try await a.call("sendMessage", ["roomId": "r1", "body": "one"]).errorCode == nil)
        #expect(Self.sends(server) == 1)

        // E11: after its exit the session is gone on the loop too: refused there, nothing proposed.
        #expect(try await a.call("exit", ["roomId": "r1"]).errorCode == nil)
        #expect(try await a.call("authMode", ["roomId": "r1"]).errorCode == 13100)
        #expect(try await a.call("sendMessage", ["roomId": "r1", "body": "after exit"]).errorCode == 13100)
        #expect(Self.sends(server) == 1)
        // A8: another room's id is scoped to the connection's app: never in, never proposed.
        #expect(try await a.call("sendMessage", ["roomId": "r2", "body": "elsewhere"]).errorCode == 13100)
        #expect(Self.sends(server) == 1)

        // Entered again, the loop sends again.
        try await a.enter("alice")
        #expect(try await a.call("sendMessage", ["roomId": "r1", "body": "two"]).errorCode == nil)
        #expect(Self.sends(server) == 2)

        // E9: a kick reaches the edge through the feed; the loop then refuses without proposing, and the
        // connection stays open.
        #expect(try await a.call("kick", ["roomId": "r1", "userId": "bob"]).errorCode == nil)
        _ = try await b.event("kicked")
        try await eventually { await server.edge.counts.sessions == 1 }
        #expect(try await b.call("sendMessage", ["roomId": "r1", "body": "kicked"]).errorCode == 13100)
        #expect(Self.sends(server) == 2)
        #expect(!b.isClosed)
        await a.close()
        await b.close()
    }

    @Test("A1 issue 35: one budget for requests answered on the loop and on the edge — pings, messages, exit and enter")
    func oneBudgetForBothPaths() async throws {
        var settings = EdgeSettings.testing
        settings.requestBudget = ConnectionBudget(requestsPerSecond: 1, burst: 8)
        let server = try await Fixture.server(settings: settings)
        defer { Task { await server.stop() } }
        let began = ContinuousClock.now
        let a = try await server.client()  // hello: 1 of 8
        try await a.enter("alice")         // 2 of 8 (on the edge)
        #expect(try await a.call("ping").errorCode == nil)                                        // 3 (on the loop)
        #expect(try await a.call("sendMessage", ["roomId": "r1", "body": "x"]).errorCode == nil)  // 4
        #expect(try await a.call("exit", ["roomId": "r1"]).errorCode == nil)                      // 5 (on the edge)
        try await a.enter("alice")                                                                // 6
        // Two tokens left, plus one a second since the first request: ten sent at once cannot all pass,
        // whichever path answers them, and what passed is what the one bucket allows.
        let kinds: [[String: Any]] = [["op": "ping"], ["op": "sendMessage", "roomId": "r1", "body": "y"],
                                      ["op": "authMode", "roomId": "r1"]]
        for i in 0..<10 { a.send(json: kinds[i % kinds.count].merging(["id": 500 + i]) { x, _ in x }) }
        var codes: [Int64?] = []
        for i in 0..<10 { codes.append(try await a.answer(Int64(500 + i)).errorCode) }
        let took = ContinuousClock.now - began
        #expect(codes.allSatisfy { $0 == nil || $0 == 416 }, "\(codes)")
        let passed = codes.filter { $0 == nil }.count
        #expect(passed >= 2 && passed <= 2 + Int(took.components.seconds) + 1, "\(passed) passed in \(took): \(codes)")
        #expect(codes.contains(416))
        await a.close()
    }
}
