import Foundation
import ParleyEdge
import Testing

/// Issue 38 item 3 at the edge: a supergroup's events do not name its members, so the edge delivers them only
/// to devices the team's shard confirmed are members, and stops at the team's own departures — even while the
/// relay that tells a user's record it left the team is cut off (a partition between the shards), when the
/// user's record still lists the team and a device logging in then follows it.
@Suite("Edge supergroups")
struct EdgeSuperTeamTests {
    let im = EdgeImTests()

    @Test("001 supergroup with the relay cut off: a departed member's devices, old and newly logged in, hear nothing after the leave")
    func departureWithoutTheRelay() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let alice = try await server.client(), bob = try await server.client(), carol = try await server.client()
        for (c, account) in [(alice, "alice"), (bob, "bob"), (carol, "carol")] { _ = try await im.login(c, account) }
        im.ok(try await alice.call("teamCreate", ["teamId": "hall", "name": "Hall", "type": "superTeam", "beInviteMode": "noAuth"]))
        im.ok(try await alice.call("teamInvite", ["teamId": "hall", "targets": ["bob", "carol"]]))
        for c in [bob, carol] {
            _ = try await c.event("im") { $0["kind"] == .string("teamMembership") && $0["isMember"] == .bool(true) }
        }
        // Both confirmed by the team's shard (asked right after the membership event): the message reaches them.
        try await Task.sleep(for: .milliseconds(300))
        im.ok(try await alice.call("sendTeamMessage", ["teamId": "hall", "body": "m1"]))
        for c in [bob, carol] { _ = try await c.event("team") { $0["item"]?["body"] == .string("m1") } }

        // The relay is cut off: bob leaves, his record still lists the team, a new device of his follows it.
        server.cluster.holdRelay(true)
        im.ok(try await bob.call("teamLeave", ["teamId": "hall"]))
        _ = try await bob.event("team") { $0["item"]?["operation"] == .int(2) }
        let phone = try await server.client()
        _ = try await im.login(phone, "bob")
        try await Task.sleep(for: .milliseconds(300))
        im.ok(try await alice.call("sendTeamMessage", ["teamId": "hall", "body": "m2"]))
        _ = try await carol.event("team") { $0["item"]?["body"] == .string("m2") }
        for device in [bob, phone] {
            let heard = try await device.drainEvents(after: .milliseconds(500))
            #expect(!heard.contains { $0["item"]?["body"] == .string("m2") }, "\(heard)")
        }
        server.cluster.holdRelay(false)
        for c in [alice, bob, carol, phone] { await c.close() }
    }

    @Test("001 supergroup: type is advanced or superTeam (414 otherwise, nothing made); a team read names the type")
    func typeField() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let alice = try await server.client()
        _ = try await im.login(alice, "alice")
        #expect(im.code(try await alice.call("teamCreate", ["teamId": "hall", "name": "Hall", "type": "discussion"])) == 414)
        #expect(im.code(try await alice.call("teamQuery", ["teamId": "hall", "limit": 1])) == 14209)
        im.ok(try await alice.call("teamCreate", ["teamId": "hall", "name": "Hall", "type": "superTeam"]))
        im.ok(try await alice.call("teamCreate", ["teamId": "kite", "name": "Kite"]))
        #expect(try await alice.call("teamQuery", ["teamId": "hall", "limit": 1])["data"]?["team"]?["type"] == .string("superTeam"))
        #expect(try await alice.call("teamQuery", ["teamId": "kite", "limit": 1])["data"]?["team"]?["type"] == .string("advanced"))
        // members: false leaves the list out (a gap fill's read), on the new read and beside an older node alike.
        im.ok(try await alice.call("sendTeamMessage", ["teamId": "hall", "body": "hi"]))
        for everyNodeNew in [true, false] {
            server.cluster.setTakeOverReadable(everyNodeNew)
            let items = try await alice.call("teamQuery", ["teamId": "hall", "limit": 5, "members": false])["data"]?["team"]
            #expect(items?["members"] == .array([]) && items?["items"]?.array?.isEmpty == false && items?["type"] == .string("superTeam"),
                    "\(String(describing: items))")
            let full = try await alice.call("teamQuery", ["teamId": "hall", "limit": 5])["data"]?["team"]
            #expect(full?["members"]?.array?.count == 1)
        }
        server.cluster.setTakeOverReadable(true)
        // While a node of an older release runs, no supergroup is made (5030).
        server.cluster.setTakeOverReadable(false)
        #expect(im.code(try await alice.call("teamCreate", ["teamId": "hall2", "name": "Hall", "type": "superTeam"])) == 5030)
        await alice.close()
    }
}
