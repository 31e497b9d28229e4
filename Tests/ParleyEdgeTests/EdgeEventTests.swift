import Foundation
import ParleyEdge
import ParleyRooms
import Testing

/// The RC-style events and the remaining notification types, through real WebSockets.
@Suite("Edge events")
struct EdgeEventTests {
    @Test("E7 E11 E12: multiLoginSync to the user's other device, status joined / quit, memberChange join / quit")
    func sessionEvents() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        var policy = AppPolicy()
        policy.memberChangeEvents = true
        _ = try await server.cluster.asAppServer(.setAppPolicy(policy), room: "r1")
        let a = try await server.client()
        try await a.enter("alice")
        let joined = try await a.event("status") { $0["data"]?["status"] == .string("joined") }
        #expect(joined["seq"] == .int(0))
        #expect(joined["data"]?["memberCount"] == .int(1))
        let phone = try await server.client()
        try await phone.enter("alice")
        let sync = try await a.event("multiLoginSync")
        #expect(sync["data"]?["joined"] == .bool(true))
        let b = try await server.client()
        try await b.enter("bob")
        let change = try await a.event("memberChange") { $0["data"]?["actions"]?.array?.first?["userId"] == .string("bob") }
        #expect(change["data"]?["actions"]?.array?.first?["action"] == .string("join"))
        #expect(change["data"]?["memberCount"] == .int(2))
        #expect(try await phone.call("exit", ["roomId": "r1"])["ok"] == .bool(true))
        _ = try await phone.event("status") { $0["data"]?["status"] == .string("quit") }
        let leave = try await a.event("multiLoginSync") { $0["data"]?["joined"] == .bool(false) }
        #expect(leave["data"]?["reason"] == .int(1))
        await b.close()
        _ = try await a.event("memberChange") { $0["data"]?["actions"]?.array?.first?["action"] == .string("quit") }
        await a.close()
        await phone.close()
    }

    @Test("M2 M8 R2: 303 / 304 with block events, 309 / 310, 315, and 311 with kicked reason 1 and status destroyed")
    func memberNotificationsAndClose() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let a = try await server.client()
        let b = try await server.client()
        let c = try await server.client()
        try await a.enter("alice")
        try await b.enter("bob")
        try await c.enter("carol")
        func ok(_ answer: JSONValue) { #expect(answer["ok"] == .bool(true), "\(answer)") }
        ok(try await a.call("markNormal", ["roomId": "r1", "userId": "bob", "enable": true]))
        ok(try await a.call("markNormal", ["roomId": "r1", "userId": "bob", "enable": false]))
        ok(try await a.call("setTempMute", ["roomId": "r1", "userId": "bob", "duration": 30]))
        ok(try await a.call("setTempMute", ["roomId": "r1", "userId": "bob", "duration": 0]))
        for type in [309, 310, 314, 315] {
            _ = try await b.event("notification") { $0["data"]?["type"] == .int(Int64(type)) }
        }
        ok(try await a.call("setBlacklist", ["roomId": "r1", "userId": "carol", "enable": true, "notifyExt": "out"]))
        let added = try await a.event("notification") { $0["data"]?["type"] == .int(303) }
        #expect(added["data"]?["targets"]?.array?.first?["userId"] == .string("carol"))
        #expect(added["data"]?["notifyExt"] == .string("out"))
        let block = try await a.event("block")
        #expect(block["data"]?["blocked"] == .bool(true))
        #expect(block["data"]?["userIds"] == .array([.string("carol")]))
        let kicked = try await c.event("kicked")
        #expect(kicked["data"]?["reason"] == .int(5))
        ok(try await a.call("setBlacklist", ["roomId": "r1", "userId": "carol", "enable": false]))
        _ = try await a.event("notification") { $0["data"]?["type"] == .int(304) }

        _ = try await server.cluster.asAppServer(.closeRoom(roomId: "r1", ext: "closing time"), room: "r1")
        let closed = try await b.event("notification") { $0["data"]?["type"] == .int(311) }
        #expect(closed["data"]?["source"]?["userId"] == .string(""))
        let gone = try await b.event("kicked")
        #expect(gone["data"]?["reason"] == .int(1))
        #expect(gone["data"]?["ext"] == .string("closing time"))
        let destroyed = try await b.event("status") { $0["data"]?["status"] == .string("destroyed") }
        #expect(destroyed["data"]?["type"] == .int(0))
        try await eventually { await server.edge.counts.sessions == 0 }
        await a.close()
        await b.close()
        await c.close()
    }
}
