import Foundation
import ParleyEdge
import ParleyRooms
import Testing

/// Issue 19 through real WebSockets (docs/protocol.md, "IM"): the IM login, the seed 004 friend flow with its
/// events on every device of both users, the blocklist, one-to-one messages to every device and the sender's
/// other devices, sync by sequence, and bad input refused with its code.
@Suite("Edge IM")
struct EdgeImTests {
    func login(_ c: TestClient, _ account: String) async throws -> JSONValue {
        let answer = try await c.call("imLogin", ["auth": Fixture.auth(account, mode: "im")])
        #expect(answer["ok"] == .bool(true), "\(answer)")
        return answer
    }

    func ok(_ answer: JSONValue) { #expect(answer["ok"] == .bool(true), "\(answer)") }

    func code(_ answer: JSONValue) -> Int64? {
        if case .int(let c)? = answer["error"]?["code"] { return c }
        return nil
    }

    @Test("issue 35: a logged-in device's one-to-one message to a known account goes from its loop; the rest as before")
    func oneToOneMessagesFromTheConnectionsLoop() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let alice = try await server.client(), bob = try await server.client()
        // Before a login: 4018 from the edge, nothing submitted.
        #expect(code(try await alice.call("sendP2P", ["to": "bob", "body": "too soon"])) == 4018)
        #expect(server.cluster.imSubmittedOnLoop == 0)
        _ = try await login(alice, "alice")
        _ = try await login(bob, "bob")
        let sent = try await alice.call("sendP2P", ["to": "bob", "body": "hi", "clientMessageId": "a1"])
        ok(sent)
        #expect(sent["data"]?["seq"] != nil && server.cluster.imSubmittedOnLoop == 1)
        let item = try await bob.event("im") { $0["kind"] == .string("item") }
        #expect(item["item"]?["body"] == .string("hi"), "\(item)")
        // An account the registry does not hold: the edge asks it again and refuses; nothing from the loop.
        #expect(code(try await alice.call("sendP2P", ["to": "nobody", "body": "x"])) == 14217)
        #expect(server.cluster.imSubmittedOnLoop == 1)
        // Bad input is refused before anything is sent (A6), on the loop as on the edge.
        #expect(code(try await alice.call("sendP2P", ["to": "bob"])) != nil)
        #expect(server.cluster.imSubmittedOnLoop == 1)
        await alice.close()
        await bob.close()
    }

    @Test("issue 35: a logged-in device's team message goes from its loop (the team's shard decides membership); before a login the actor answers 4018")
    func teamMessagesFromTheConnectionsLoop() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let alice = try await server.client(), bob = try await server.client()
        #expect(code(try await alice.call("sendTeamMessage", ["teamId": "crew", "body": "too soon"])) == 4018)
        #expect(server.cluster.imSubmittedOnLoop == 0)
        _ = try await login(alice, "alice")
        _ = try await login(bob, "bob")
        ok(try await alice.call("teamCreate", ["teamId": "crew", "name": "Crew", "beInviteMode": "noAuth"]))
        ok(try await alice.call("teamInvite", ["teamId": "crew", "targets": ["bob"]]))
        let before = server.cluster.imSubmittedOnLoop
        let sent = try await alice.call("sendTeamMessage", ["teamId": "crew", "body": "hi team", "clientMessageId": "t1"])
        ok(sent)
        #expect(sent["data"]?["seq"] != nil && server.cluster.imSubmittedOnLoop == before + 1)
        let heard = try await bob.event("team") { $0["item"]?["body"] == .string("hi team") }
        #expect(heard["teamId"] == .string("crew"), "\(heard)")
        // Not a member: the team's shard refuses (14214), as from the actor.
        let carol = try await server.client()
        _ = try await login(carol, "carol")
        #expect(code(try await carol.call("sendTeamMessage", ["teamId": "crew", "body": "let me in"])) == 14214)
        await alice.close()
        await bob.close()
        await carol.close()
    }

    @Test("004: request and verify reach both users' devices: FriendAdd items (request, verify) and friendChanged")
    func friendRequestWithVerification() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let alice = try await server.client(), bobPhone = try await server.client(), bobPad = try await server.client()
        _ = try await login(alice, "alice")
        _ = try await login(bobPhone, "bob")
        _ = try await login(bobPad, "bob")
        ok(try await alice.call("friend", ["target": "bob", "operation": "request", "message": "hi bob"]))
        for device in [bobPhone, bobPad] {
            let item = try await device.event("im") { $0["kind"] == .string("item") }
            #expect(item["item"]?["kind"] == .string("friendAdd") && item["item"]?["operation"] == .int(2)
                    && item["item"]?["source"] == .string("alice") && item["item"]?["target"] == .string("bob")
                    && item["item"]?["msg"] == .string("hi bob"), "\(item)")
        }
        ok(try await bobPad.call("friend", ["target": "alice", "operation": "verify"]))
        for device in [bobPhone, bobPad] {
            let changed = try await device.event("im") { $0["kind"] == .string("friendChanged") }
            #expect(changed["friend"] == .string("alice") && changed["isFriend"] == .bool(true))
        }
        let changed = try await alice.event("im") { $0["kind"] == .string("friendChanged") }
        #expect(changed["friend"] == .string("bob") && changed["isFriend"] == .bool(true))
        let verified = try await alice.event("im") { $0["kind"] == .string("item") }
        #expect(verified["item"]?["operation"] == .int(3))
        let relations = try await alice.call("relations")
        #expect(relations["data"]?["relations"]?["friends"]?.array?.first?["account"] == .string("bob"), "\(relations)")
        // A second verify has no request to answer: 14205, nothing changes.
        #expect(code(try await bobPhone.call("friend", ["target": "alice", "operation": "verify"])) == 14205)
    }

    @Test("004: a blocked user's message is refused (14201) and never delivered; DND delivers without an alert")
    func blocklistAndDoNotDisturb() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let bob = try await server.client(), carol = try await server.client(), alice = try await server.client()
        _ = try await login(bob, "bob")
        _ = try await login(carol, "carol")
        _ = try await login(alice, "alice")
        ok(try await bob.call("setBlocked", ["target": "carol", "blocked": true]))
        _ = try await bob.event("im") { $0["kind"] == .string("blocklistChanged") }
        #expect(code(try await carol.call("sendP2P", ["to": "bob", "body": "let me in", "clientMessageId": "c1"])) == 14201)
        ok(try await bob.call("setMuted", ["target": "alice", "muted": true]))
        ok(try await alice.call("sendP2P", ["to": "bob", "body": "quiet", "clientMessageId": "a1"]))
        let item = try await bob.event("im") { $0["kind"] == .string("item") }
        #expect(item["item"]?["body"] == .string("quiet") && item["item"]?["alert"] == .bool(false), "\(item)")
        let rest = try await bob.drainEvents()
        #expect(!rest.contains { $0["item"]?["from"] == .string("carol") }, "carol's message never reaches bob: \(rest)")
        let synced = try await bob.call("syncIm", ["afterSeq": 0, "limit": 100])
        #expect(synced["data"]?["items"]?.array?.map { $0["body"] } == [.string("quiet")], "\(synced)")
    }

    @Test("19: P2P to every device of the receiver and the sender's other devices; a new device syncs all in order")
    func messagesReachEveryDeviceAndSyncInOrder() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let alice = try await server.client(), aliceTab = try await server.client(), bob = try await server.client()
        _ = try await login(alice, "alice")
        _ = try await login(aliceTab, "alice")
        _ = try await login(bob, "bob")
        var seqs: [Int64] = []
        for i in 0..<5 {
            let sent = try await alice.call("sendP2P", ["to": "bob", "body": "m\(i)", "clientMessageId": "a\(i)"])
            ok(sent)
            if case .int(let s)? = sent["data"]?["seq"] { seqs.append(s) }
        }
        #expect(seqs == [1, 2, 3, 4, 5])
        // A resend answers the first send's seq and delivers nothing new.
        #expect(try await alice.call("sendP2P", ["to": "bob", "body": "m2", "clientMessageId": "a2"])["data"]?["seq"] == .int(3))
        for i in 0..<5 {
            let got = try await bob.event("im") { $0["kind"] == .string("item") }
            #expect(got["item"]?["body"] == .string("m\(i)") && got["item"]?["seq"] == .int(Int64(i + 1)))
            let copy = try await aliceTab.event("im") { $0["kind"] == .string("item") }
            #expect(copy["item"]?["body"] == .string("m\(i)") && copy["item"]?["receiverSeq"] == .int(Int64(i + 1))
                    && copy["item"]?["to"] == .string("bob"))
        }
        #expect(try await bob.drainEvents().filter { $0["event"] == .string("im") }.isEmpty, "each message once")
        // A device of bob that logs in now learns where the log is and syncs it in pages, in order.
        let phone = try await server.client()
        let answer = try await login(phone, "bob")
        #expect(answer["data"]?["nextSeq"] == .int(6))
        let first = try await phone.call("syncIm", ["afterSeq": 0, "limit": 3])
        let second = try await phone.call("syncIm", ["afterSeq": 3, "limit": 3])
        let bodies = (first["data"]?["items"]?.array ?? []) + (second["data"]?["items"]?.array ?? [])
        #expect(bodies.map { $0["body"] } == (0..<5).map { .string("m\($0)") })
    }

    @Test("19: a device follows its user's shard and its teams' shards while logged in; the feeds stop when it goes")
    func feedsFollowLoginsAndTeams() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let alice = try await server.client()
        _ = try await login(alice, "alice")
        ok(try await alice.call("teamCreate", ["teamId": "crew", "name": "Crew"]))
        // A device of bob that logs in after he joined follows the team from its login.
        let bob = try await server.client()
        _ = try await login(bob, "bob")
        ok(try await alice.call("teamInvite", ["teamId": "crew", "targets": ["bob"]]))
        ok(try await bob.call("teamAcceptInvitation", ["teamId": "crew"]))
        _ = try await bob.event("im") { $0["kind"] == .string("teamMembership") && $0["isMember"] == .bool(true) }
        let later = try await server.client()
        _ = try await login(later, "bob")
        ok(try await alice.call("sendTeamMessage", ["teamId": "crew", "body": "hi"]))
        for device in [bob, later] {
            let got = try await device.event("team") { $0["item"]?["body"] == .string("hi") }
            #expect(got["teamId"] == .string("crew") && got["alert"] == .bool(true))
        }
        #expect(await server.edge.counts.feeds > 0)
        for c in [alice, bob, later] { await c.close() }
        try await eventually { await server.edge.counts.feeds == 0 }
    }

    @Test("E4: after imLogin a chat-room enter in im mode rides on the login without a token; without a login it needs one")
    func chatRoomEnterRidesOnTheImLogin() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let c = try await server.client()
        let bare = try await c.call("enter", ["roomId": "r1", "auth": ["mode": "im", "appKey": Fixture.app, "account": "alice"]])
        #expect(code(bare) == 4010, "no login, no token: \(bare)")
        let d = try await server.client()
        _ = try await login(d, "alice")
        let entered = try await d.call("enter", ["roomId": "r1", "auth": ["mode": "im", "appKey": Fixture.app, "account": "alice"]])
        #expect(entered["ok"] == .bool(true) && entered["data"]?["authMode"] == .string("im"), "\(entered)")
        ok(try await d.call("sendMessage", ["roomId": "r1", "body": "from my IM login"]))
    }

    @Test("38: read receipts over WebSockets: a team mark tells the sender's devices (kind teamRead), teamReceipts counts, a one-to-one mark tells the peer (kind p2pRead), conversations counts; malformed marks are 414 and change nothing")
    func readReceipts() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        func first(_ v: JSONValue?) -> JSONValue? { if case .array(let a)? = v { a.first } else { nil } }
        let alice = try await server.client(), bob = try await server.client()
        _ = try await login(alice, "alice")
        _ = try await login(bob, "bob")
        ok(try await alice.call("teamCreate", ["teamId": "crew", "name": "Crew", "beInviteMode": "noAuth"]))
        ok(try await alice.call("teamInvite", ["teamId": "crew", "targets": ["bob"]]))
        let sent = try await alice.call("sendTeamMessage", ["teamId": "crew", "body": "hello"])
        guard case .int(let seq)? = sent["data"]?["seq"] else { Issue.record("\(sent)"); return }
        for bad: [String: Any] in [["teamId": "crew", "peer": "alice", "throughSeq": seq], ["throughSeq": seq],
                                   ["teamId": "crew"], ["teamId": "crew", "throughSeq": -1]] {
            #expect(code(try await bob.call("markRead", bad)) == 414, "\(bad)")
        }
        #expect(code(try await bob.call("teamReceipts", ["teamId": "crew", "seqs": [Int]()])) == 414)
        let unread = try await alice.call("teamReceipts", ["teamId": "crew", "seqs": [seq]])
        #expect(first(unread["data"]?["receipts"])?["unread"] == .array([.string("bob")]), "\(unread)")
        ok(try await bob.call("markRead", ["teamId": "crew", "throughSeq": seq]))
        let heard = try await alice.event("im") { $0["kind"] == .string("teamRead") }
        #expect(heard["teamId"] == .string("crew") && heard["reader"] == .string("bob") && heard["throughSeq"] == .int(seq), "\(heard)")
        let read = try await alice.call("teamReceipts", ["teamId": "crew", "seqs": [seq]])
        let receipt = first(read["data"]?["receipts"])
        #expect(receipt?["readers"] == .array([.string("bob")]) && receipt?["readCount"] == .int(1) && receipt?["unreadCount"] == .int(0)
                && receipt?["from"] == .string("alice") && receipt?["seq"] == .int(seq), "\(read)")

        let p2p = try await alice.call("sendP2P", ["to": "bob", "body": "psst"])
        guard case .int(let receiverSeq)? = p2p["data"]?["seq"] else { Issue.record("\(p2p)"); return }
        let before = try await bob.call("conversations", [:])
        #expect(first(before["data"]?["conversations"])?["unread"] == .int(1) && first(before["data"]?["conversations"])?["peer"] == .string("alice"), "\(before)")
        ok(try await bob.call("markRead", ["peer": "alice", "throughSeq": receiverSeq]))
        let told = try await alice.event("im") { $0["kind"] == .string("p2pRead") }
        #expect(told["peer"] == .string("bob") && told["reader"] == .string("bob") && told["throughSeq"] == .int(receiverSeq), "\(told)")
        let after = try await bob.call("conversations", [:])
        let c = first(after["data"]?["conversations"])
        #expect(c?["unread"] == .int(0) && c?["readThrough"] == .int(receiverSeq) && c?["last"]?["body"] == .string("psst"), "\(after)")
        #expect(after["data"]?["teams"] != nil, "the teams' part is always there")
        await alice.close()
        await bob.close()
    }

    @Test("19: IM ops need a login; bad tokens, bad fields, notification sends and other accounts are refused")
    func badInputIsRefused() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let c = try await server.client()
        #expect(code(try await c.call("relations")) == 4018)
        #expect(code(try await c.call("sendP2P", ["to": "bob", "body": "x"])) == 4018)
        _ = try await login(c, "alice")
        #expect(code(try await c.call("sendP2P", ["to": "bob", "body": "x", "type": "notification"])) == 414)
        #expect(code(try await c.call("sendP2P", ["to": "demo\u{1F}bob", "body": "x"])) == 414)
        #expect(code(try await c.call("sendP2P", ["to": "bob", "body": ""])) == 414)
        #expect(code(try await c.call("friend", ["target": "bob", "operation": "befriend"])) == 414)
        #expect(code(try await c.call("friend", ["target": "alice", "operation": "add"])) == 14202)
        #expect(code(try await c.call("syncIm", ["limit": 0])) == 414)
        // Accounts the app does not have: refused before anything is proposed (no record for a made-up user).
        #expect(code(try await c.call("friend", ["target": "nobody", "operation": "request"])) == 14217)
        #expect(code(try await c.call("sendP2P", ["to": "nobody", "body": "x"])) == 14217)
        // Issue 38, seed 001's team types: one Parley does not build (NIM's retired discussion group) is refused
        // (414 naming `type`), not made as an advanced team.
        let discussion = try await c.call("teamCreate", ["teamId": "big", "name": "Big", "type": "discussion"])
        #expect(code(discussion) == 414 && discussion["error"]?["message"]?.string?.contains("type") == true, "\(discussion)")
        #expect(code(try await c.call("teamCreate", ["teamId": "big", "name": "Big", "type": "normal"])) == 414)
        #expect(code(try await c.call("teamQuery", ["teamId": "big", "limit": 1])) == 14209, "no team was made")
        ok(try await c.call("teamCreate", ["teamId": "t9", "name": "T", "type": "advanced"]))
        #expect(code(try await c.call("teamInvite", ["teamId": "t9", "targets": ["bob", "nobody"]])) == 14217)
        // Seed 001: a notification's notifyExt is the server API's alone — refused 14208, nothing run.
        let before = try await c.call("teamQuery", ["teamId": "t9", "limit": 100])["data"]
        #expect(code(try await c.call("teamUpdate", ["teamId": "t9", "name": "Renamed", "notifyExt": "x"])) == 14208)
        #expect(try await c.call("teamQuery", ["teamId": "t9", "limit": 100])["data"] == before, "the refused update changed nothing")
        ok(try await c.call("teamUpdate", ["teamId": "t9", "name": "Renamed"]))
        #expect(try await c.call("teamQuery", ["teamId": "t9", "limit": 100])["data"]?["team"]?["name"] == .string("Renamed"))
        #expect(code(try await c.call("imLogin", ["auth": Fixture.auth("bob", mode: "im")])) == 4013)
        #expect(code(try await c.call("enter", Fixture.enter("bob"))) == 4013)
        ok(try await c.call("enter", Fixture.enter("alice")))
        let relations = try await c.call("relations")
        #expect(relations["data"]?["relations"]?["friends"]?.array == [], "refused commands changed nothing: \(relations)")
        let stranger = try await server.client()
        let refused = try await stranger.call("imLogin", ["auth": ["mode": "im", "appKey": Fixture.app, "account": "bob", "token": "wrong"]])
        #expect(code(refused) == 4010)
        #expect(try await stranger.closed() == 4401)
    }
}
