import Foundation
import ParleyCluster
import ParleyEdge
import ParleyRooms
import ParleyPlacement
import ParleyTestSupport
import Testing

/// Sessions through real WebSockets against a real `RoomsState` cluster: auth, messages, notifications,
/// kicks, disconnects, resume.
@Suite("Edge sessions")
struct EdgeSessionTests {
    @Test("E4 E5: bad token 4010, unknown account 4010, unknown app 4012, revoked 4015, expired 4011 — each closes 4401")
    func authErrorsClose() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        server.cluster.addUser(appKey: Fixture.app, account: "old", token: "t-old", expiresAt: 1)
        server.cluster.addUser(appKey: Fixture.app, account: "gone", token: "t-gone")
        server.cluster.meta(.revokeToken(appKey: Fixture.app, account: "gone"))
        let cases: [([String: Any], Int64)] = [
            (["mode": "independent", "appKey": Fixture.app, "account": "alice", "token": "wrong"], 4010),
            (["mode": "im", "appKey": Fixture.app, "account": "nobody", "token": "x"], 4010),
            (["mode": "independent", "appKey": "nope", "account": "alice", "token": "t-alice"], 4012),
            (["mode": "independent", "appKey": Fixture.app, "account": "gone", "token": "t-gone"], 4015),
            (["mode": "independent", "appKey": Fixture.app, "account": "old", "token": "t-old"], 4011),
            (["mode": "anonymous", "appKey": "nope"], 4012),
        ]
        for (auth, code) in cases {
            let c = try await server.client()
            let answer = try await c.call("enter", ["roomId": "r1", "auth": auth, "nickname": "n", "avatar": "a"])
            #expect(answer.errorCode == code, "\(auth)")
            #expect(try await c.closed() == 4401)
        }
    }

    @Test("C5 upgrade: an enter replacing a session is a plain enter until every node reads take-overs (tag 38)")
    func takeOverWaitsForEveryNode() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        func replacing() -> [String] {
            server.cluster.submitted.compactMap { command, _ in if case .enter(let e) = command { e.replacing } else { nil } }
        }
        let first = try await server.client()
        #expect(try await first.call("enter", Fixture.enter("alice"))["ok"] == .bool(true))
        let old = try #require(server.cluster.submitted.compactMap { _, actor -> String? in
            if case .session(let s) = actor { s.sessionId } else { nil } }.first)
        server.cluster.setTakeOverReadable(false)
        let mixed = try await server.client()
        #expect(try await mixed.call("enter", Fixture.enter("alice", extra: ["replacing": old]))["ok"] == .bool(true))
        #expect(replacing() == ["", ""], "a node cannot read tag 38 yet: the edge writes a plain enter")
        server.cluster.setTakeOverReadable(true)
        let moved = try await server.client()
        #expect(try await moved.call("enter", Fixture.enter("alice", extra: ["replacing": old]))["ok"] == .bool(true))
        #expect(replacing() == ["", "", old])
    }

    @Test("E4: the token is checked on every enter: revoked after the first, the second enter gets 4015 and close 4401")
    func tokenCheckedOnEveryEnter() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        try await server.cluster.createRoom("r2")
        let c = try await server.client()
        try await c.enter("alice")
        server.cluster.meta(.revokeToken(appKey: Fixture.app, account: "alice"))
        #expect(try await c.call("enter", Fixture.enter("alice", room: "r2")).errorCode == 4015)
        #expect(try await c.closed() == 4401)
        // The close ended the first room's session too.
        try await eventually { await server.edge.counts.sessions == 0 }
    }

    @Test("E5: anonymous needs nickname and avatar (4014), gets an anon- account, cannot send (13102); one account per connection (4013)")
    func anonymous() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let c = try await server.client()
        let anonAuth: [String: Any] = ["mode": "anonymous", "appKey": Fixture.app]
        #expect(try await c.call("enter", ["roomId": "r1", "auth": anonAuth, "nickname": "x"]).errorCode == 4014)
        let answer = try await c.call("enter", ["roomId": "r1", "auth": anonAuth, "nickname": "Guest", "avatar": "a.png"])
        #expect(answer["ok"] == .bool(true))
        #expect(answer["data"]?["account"]?.string?.hasPrefix("anon-") == true)
        #expect(answer["data"]?["authMode"] == .string("anonymous"))
        #expect(try await c.call("authMode", ["roomId": "r1"])["data"]?["authMode"] == .string("anonymous"))
        #expect(try await c.call("sendMessage", ["roomId": "r1", "body": "hi"]).errorCode == 13102)
        #expect(try await c.call("enter", Fixture.enter("bob", room: "r2")).errorCode == 4013)
        #expect(try await c.call("enter", ["roomId": "r1", "auth": anonAuth, "nickname": "G", "avatar": "a"]).errorCode == 4016)
        await c.close()
    }

    /// A8: a room of an app outside the legacy namespace is the cluster's `app␟room`: its clients name it
    /// `room` and see `room` in every answer and event; another app's clients cannot reach it by that name,
    /// and it cannot reach theirs; an id that names a namespace itself is refused.
    @Test("A8: the edge scopes room ids by the connection's app and strips the namespace from what it sends")
    func roomIdsAreScopedByTheConnectionsApp() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        server.cluster.addApp("other")
        server.cluster.addUser(appKey: "other", account: "olga", token: "t-olga")
        try await server.cluster.createRoom("r2")  // demo's r2 (the legacy namespace)
        let scoped = AppScope.scoped("r1", in: "other")  // app other's own r1, not demo's
        let made = try await server.cluster.asAppServer(.createRoom(CreateRoom(roomId: scoped, creator: "olga", name: "O")),
                                                        room: scoped)
        #expect(made.errorCode == nil)
        let olga = try await server.client()
        let auth: [String: Any] = ["mode": "independent", "appKey": "other", "account": "olga", "token": "t-olga"]
        let entered = try await olga.call("enter", ["roomId": "r1", "auth": auth, "nickname": "Olga"])
        #expect(entered["data"]?["room"]?["roomId"] == .string("r1") && entered["data"]?["room"]?["name"] == .string("O"))
        #expect(entered["data"]?["member"]?["type"] == .string("creator"), "olga created other's r1, not demo's")
        _ = try await olga.call("sendMessage", ["roomId": "r1", "body": "hi"])
        let message = try await olga.event("message")
        #expect(message["roomId"] == .string("r1"))
        // demo's alice, in demo's r1 (the legacy namespace), sees nothing of it; olga's op on "r2" (demo's)
        // is an op on other's r2, where she is not.
        let alice = try await server.client()
        try await alice.enter("alice")
        #expect(try await alice.drainEvents().allSatisfy { $0["event"] != .string("message") })
        // Every room op of olga's connection names a room of app other: on "r2" (demo's room, not entered by
        // olga in other's namespace) each is refused as not entered, and demo's r2 is untouched.
        let ops: [(String, [String: Any])] = [
            ("exit", [:]), ("authMode", [:]), ("sendMessage", ["body": "x"]), ("fetchHistory", ["limit": 10]),
            ("fetchRoomInfo", [:]), ("updateRoomInfo", ["announcement": "other was here"]),
            ("fetchMembers", ["type": "regular", "limit": 10]), ("fetchMembersByIds", ["userIds": ["alice"]]),
            ("updateMyMemberInfo", ["nickname": "x"]), ("markManager", ["userId": "bob", "enable": true]),
            ("markNormal", ["userId": "bob", "enable": true]), ("setBlacklist", ["userId": "bob", "enable": true]),
            ("setMute", ["userId": "bob", "enable": true]), ("setTempMute", ["userId": "bob", "duration": 60]),
            ("kick", ["userId": "bob"]), ("setRoomMute", ["enable": true]), ("updateAllowlist", ["enable": true, "userIds": ["bob"]]),
            ("queueList", [:]), ("queueOffer", ["key": "k", "value": "v"]),
            ("queueBatchUpdate", ["elements": [["key": "k", "value": "v"]]]), ("queuePoll", [:]), ("queueDrop", [:]),
        ]
        for (op, fields) in ops {
            let answer = try await olga.call(op, fields.merging(["roomId": "r2"]) { a, _ in a })
            #expect(answer.errorCode == 13100, "\(op) on another app's room: \(answer)")
        }
        let demoR2 = try await server.cluster.asAppServer(.fetchRoomInfo(roomId: "r2"), room: "r2")
        guard case .success(.roomInfo(let view)) = demoR2.result else {
            Issue.record("demo's r2: \(demoR2)")
            return
        }
        #expect(view.info.announcement == "" && view.onlineUserCount == 0)
        let smuggled = try await olga.call("fetchRoomInfo", ["roomId": "demo\u{1F}r1"])
        #expect(smuggled.errorCode == 414, "\(smuggled)")
        await olga.close()
        await alice.close()
    }

    @Test("E1 N1: two sessions see each other's messages in the same order, with seq strictly increasing")
    func messagesSameOrder() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let a = try await server.client()
        let b = try await server.client()
        let entered = try await a.enter("alice")
        #expect(entered["data"]?["room"]?["roomId"] == .string("r1"))
        #expect(entered["data"]?["member"]?["type"] == .string("creator"))
        try await b.enter("bob")
        // alice sees bob's 301 enter notification.
        let join = try await a.event("notification") { $0["data"]?["type"] == .int(301) && $0["data"]?["source"]?["userId"] == .string("bob") }
        #expect(join["seq"]?.int ?? 0 > 0)
        for i in 0..<5 {
            let sender = i % 2 == 0 ? a : b
            let sent = try await sender.call("sendMessage", ["roomId": "r1", "body": "m\(i)", "clientMessageId": "c\(i)"])
            #expect(sent["data"]?["seq"]?.int ?? 0 > 0)
            #expect(sent["data"]?["serverId"]?.int ?? 0 > 0)
        }
        var seen: [[String]] = []
        for client in [a, b] {
            var bodies: [String] = []
            var lastSeq: Int64 = 0
            for _ in 0..<5 {
                let m = try await client.event("message")
                let seq = m["seq"]?.int ?? 0
                #expect(seq > lastSeq)
                lastSeq = seq
                bodies.append(m["data"]?["body"]?.string ?? "")
            }
            seen.append(bodies)
        }
        #expect(seen[0] == ["m0", "m1", "m2", "m3", "m4"])
        #expect(seen[0] == seen[1])
        let history = try await a.call("fetchHistory", ["roomId": "r1", "limit": 10, "types": ["text"]])
        #expect(history["data"]?["messages"]?.array?.count == 5)
        #expect(history["data"]?["messages"]?.array?.first?["kind"] == .string("message"))
        await a.close()
        await b.close()
    }

    @Test("N3 M2 M7 M8 R4 R5 Q2: notifications, ban and block events; kick → kicked event and the session leaves")
    func notificationsAndKick() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let (a, b) = try await server.aliceAndBobInRoom()
        func ok(_ answer: JSONValue) { #expect(answer["ok"] == .bool(true), "\(answer)") }
        ok(try await a.call("markManager", ["roomId": "r1", "userId": "bob", "enable": true]))
        ok(try await a.call("markManager", ["roomId": "r1", "userId": "bob", "enable": false]))
        ok(try await a.call("setMute", ["roomId": "r1", "userId": "bob", "enable": true]))
        #expect(try await b.call("sendMessage", ["roomId": "r1", "body": "x"]).errorCode == 13004)
        ok(try await a.call("setMute", ["roomId": "r1", "userId": "bob", "enable": false]))
        ok(try await a.call("setTempMute", ["roomId": "r1", "userId": "bob", "duration": 60]))
        ok(try await a.call("updateRoomInfo", ["roomId": "r1", "announcement": "hello"]))
        ok(try await a.call("setRoomMute", ["roomId": "r1", "enable": true]))
        ok(try await a.call("setRoomMute", ["roomId": "r1", "enable": false]))
        ok(try await b.call("updateMyMemberInfo", ["roomId": "r1", "nickname": "Bobby"]))
        ok(try await a.call("queueOffer", ["roomId": "r1", "key": "k1", "value": "v1"]))
        let list = try await a.call("queueList", ["roomId": "r1"])
        #expect(list["data"]?["elements"]?.array?.first?["key"] == .string("k1"))
        let temp = try await b.event("notification") { $0["data"]?["type"] == .int(314) }
        #expect(temp["data"]?["ext"]?["muteDuration"] == .int(60))
        let queue = try await b.event("notification") { $0["data"]?["type"] == .int(317) }
        #expect(queue["data"]?["ext"]?["change"] == .string("offer"))
        #expect(queue["data"]?["ext"]?["key"] == .string("k1"))
        for type in [307, 308, 305, 306, 312, 318, 319, 316] {
            _ = try await b.event("notification") { $0["data"]?["type"] == .int(Int64(type)) }
        }
        _ = try await b.event("ban")
        let members = try await a.call("fetchMembersByIds", ["roomId": "r1", "userIds": ["bob"]])
        #expect(members["data"]?["members"]?.array?.first?["nickname"] == .string("Bobby"))

        // M7 / E9: kick.
        ok(try await a.call("kick", ["roomId": "r1", "userId": "bob", "notifyExt": "bye"]))
        let kicked = try await b.event("kicked")
        #expect(kicked["data"]?["reason"] == .int(2))
        #expect(kicked["seq"] == .int(0))
        _ = try await a.event("notification") { $0["data"]?["type"] == .int(313) }
        // The kicked session has left: room ops answer 13100, the connection stays open.
        try await eventually { await server.edge.counts.sessions == 1 }
        #expect(try await b.call("sendMessage", ["roomId": "r1", "body": "still here?"]).errorCode == 13100)
        #expect(!b.isClosed)
        await a.close()
        await b.close()
    }

    /// SPEC A1: a connection that sends faster than its request budget is answered 416 with `retryAfterMs`
    /// for the requests over it, which do nothing; after the wait it is served again; another connection has
    /// its own budget.
    @Test("A1: the per-connection request budget answers 416 with retryAfterMs and runs nothing")
    func aConnectionOverItsRequestBudgetIsAnswered416() async throws {
        var settings = EdgeSettings.testing
        settings.requestBudget = ConnectionBudget(requestsPerSecond: 1, burst: 10)
        let server = try await Fixture.server(settings: settings)
        defer { Task { await server.stop() } }
        let (a, b) = try await server.aliceAndBobInRoom()  // hello + enter: 2 of each connection's 10
        var codes: [Int64?] = []
        var wait: Int64?
        // Sent at once, without waiting for answers; the bucket refills 1 a second while a loaded machine
        // works through them, so what may pass is bounded by the time taken.
        let began = ContinuousClock.now
        for i in 0..<40 { a.send(json: ["id": 1_000 + i, "op": "sendMessage", "roomId": "r1", "body": "m\(i)"]) }
        for i in 0..<40 {
            let answer = try await a.answer(Int64(1_000 + i), timeout: .seconds(30))
            codes.append(answer.errorCode)
            if answer.errorCode == 416, wait == nil { wait = answer["error"]?["retryAfterMs"]?.intValue }
        }
        let took = ContinuousClock.now - began
        let passed = codes.filter { $0 == nil }.count
        #expect(codes.allSatisfy { $0 == nil || $0 == 416 }, "\(codes)")
        // The bucket refilled (up to its burst of 10) while hello and enter were answered, and goes on at 1 a
        // second while the 40 are worked through.
        #expect(passed >= 8 && passed <= 10 + Int(took.components.seconds) + 1, "\(passed) passed in \(took)")
        #expect(codes.prefix(8).allSatisfy { $0 == nil }, "the burst goes first: \(codes)")
        let delay = try #require(wait)
        #expect((1...1_000).contains(delay))  // 1 a second: under a second to the next token
        // Only the requests let through were run.
        let history = try await b.call("fetchHistory", ["roomId": "r1", "limit": 100])
        let sent = history["data"]?["messages"]?.array?.filter { $0["body"]?.stringValue?.hasPrefix("m") == true }.count
        #expect(sent == passed)
        #expect(try await b.call("sendMessage", ["roomId": "r1", "body": "bob"]).errorCode == nil)
        // `delay` was the wait at the first refusal; a request let through after it may have taken the token
        // it promised, so wait out a whole token (1 a second) before asking again.
        try await Task.sleep(for: .milliseconds(1_000 + 100))
        #expect(try await a.call("sendMessage", ["roomId": "r1", "body": "later"]).errorCode == nil)
        await a.close()
        await b.close()
    }

    /// SPEC A1 (issue 35): an app's own connection budget (`/v1/app/setBudgets`, kept in the meta group)
    /// replaces the node's default once a connection entered one of the app's rooms; a change reaches a
    /// connection already open within about a second; reset, the default is back. Before a connection has
    /// an app (no enter yet) the default applies.
    @Test("A1: an app's connection budget replaces the default, also for open connections")
    func anAppsConnectionBudgetReplacesTheNodeDefault() async throws {
        var settings = EdgeSettings.testing
        settings.requestBudget = ConnectionBudget(requestsPerSecond: 1, burst: 6)
        let server = try await Fixture.server(settings: settings)
        defer { Task { await server.stop() } }
        let lifted = ConnectionBudget(requestsPerSecond: 100_000, burst: 100_000)
        #expect(server.cluster.meta(.setConnectionBudget(appKey: Fixture.app, lifted)) == .done)
        let (a, b) = try await server.aliceAndBobInRoom()
        /// Sends `count` at once and returns how many were answered 416.
        func flood(_ client: TestClient, _ count: Int, from first: Int) async throws -> Int {
            for i in 0..<count { client.send(json: ["id": first + i, "op": "sendMessage", "roomId": "r1", "body": "m\(first + i)"]) }
            var refused = 0
            for i in 0..<count {
                let code = try await client.answer(Int64(first + i), timeout: .seconds(30)).errorCode
                #expect(code == nil || code == 416)
                if code == 416 { refused += 1 }
            }
            return refused
        }
        // The app's budget, not the node's burst of 6: 40 at once all go through.
        #expect(try await flood(a, 40, from: 1_000) == 0)
        // Tightened while both are connected: within about a second their next floods meet it.
        #expect(server.cluster.meta(.setConnectionBudget(appKey: Fixture.app, ConnectionBudget(requestsPerSecond: 1, burst: 3))) == .done)
        var tightened = false
        for attempt in 0..<20 where !tightened {
            tightened = try await flood(b, 10, from: 10_000 + 10 * attempt) >= 6
            if !tightened { try await Task.sleep(for: .milliseconds(300)) }
        }
        #expect(tightened, "the app's new budget never reached the open connection")
        // Reset: the node's default (a burst of 6) again. One request has the edge read it; then the bucket
        // refills at 1 a second up to the default's burst.
        #expect(server.cluster.meta(.setConnectionBudget(appKey: Fixture.app, nil)) == .done)
        try await Task.sleep(for: .milliseconds(1_100))
        _ = try await a.call("ping", [:])
        try await Task.sleep(for: .seconds(7))
        let began = ContinuousClock.now
        let refused = try await flood(a, 20, from: 2_000)
        let took = Int((ContinuousClock.now - began).components.seconds) + 1
        #expect(refused <= 14 && refused >= 14 - took, "\(refused) of 20 refused")
        // A connection without an app yet (hello only) has the node's default.
        let c = try await server.client()
        for i in 0..<20 { c.send(json: ["id": 3_000 + i, "op": "ping"]) }
        var pingsRefused = 0
        for i in 0..<20 where try await c.answer(Int64(3_000 + i), timeout: .seconds(30)).errorCode == 416 { pingsRefused += 1 }
        #expect(pingsRefused >= 12, "\(pingsRefused) of 20 pings refused")
        await a.close()
        await b.close()
        await c.close()
    }

    /// Issue 35 item 4: a connection's requests are pipelined — while one room's shard is stuck, the same
    /// connection's requests for another room and its pings are answered; the stuck room's requests wait
    /// and then apply in the order they were sent; `exit` waits for what came before it.
    @Test("issue 35: pipelined requests — other rooms go on beside a stuck one, each room's in order")
    func pipelinedRequestsGoOnBesideAStuckRoomAndKeepEachRoomsOrder() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        try await server.cluster.createRoom("r2", creator: "alice")
        let a = try await server.client()
        try await a.enter("alice")
        try await a.enter("alice", room: "r2")
        server.cluster.hold(room: "r2")
        for i in 0..<5 { a.send(json: ["id": 100 + i, "op": "sendMessage", "roomId": "r2", "body": "s\(i)"]) }
        for i in 0..<5 { a.send(json: ["id": 200 + i, "op": "sendMessage", "roomId": "r1", "body": "f\(i)"]) }
        a.send(json: ["id": 300, "op": "ping"])
        a.send(json: ["id": 301, "op": "exit", "roomId": "r1"])
        for i in 0..<5 { #expect(try await a.answer(Int64(200 + i), timeout: .seconds(10)).errorCode == nil) }
        #expect(try await a.answer(300, timeout: .seconds(10)).errorCode == nil)
        // Still stuck: none of r2's is answered, and the exit after them waits too.
        try await Task.sleep(for: .milliseconds(200))
        #expect(!(100..<105).contains { a.hasAnswer(Int64($0)) } && !a.hasAnswer(301))
        server.cluster.release(room: "r2")
        for i in 0..<5 { #expect(try await a.answer(Int64(100 + i), timeout: .seconds(10)).errorCode == nil) }
        #expect(try await a.answer(301, timeout: .seconds(10)).errorCode == nil)
        let history = try await a.call("fetchHistory", ["roomId": "r2", "limit": 100])
        let bodies = history["data"]?["messages"]?.array?.compactMap { $0["body"]?.stringValue }.filter { $0.hasPrefix("s") }
        #expect(bodies == ["s4", "s3", "s2", "s1", "s0"] || bodies == ["s0", "s1", "s2", "s3", "s4"], "\(bodies ?? [])")
        await a.close()
    }

    /// Issue 35 item 4 / A2: pipelining is bounded — past 32 requests waiting or running the edge stops reading
    /// the connection (what one socket read brought is still handled), so a client that floods a stuck room is
    /// slowed by TCP, not buffered: a ping sent after 40 requests for the stuck room is not even read (not
    /// answered) until the room moves; then every request is answered, in order.
    @Test("issue 35: a pipelined connection holds at most 32 requests; reads wait beyond them")
    func pipelinedRequestsAreBoundedPerConnection() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        try await server.cluster.createRoom("r2", creator: "alice")
        let a = try await server.client()
        try await a.enter("alice", room: "r2")
        server.cluster.hold(room: "r2")
        for i in 0..<40 { a.send(json: ["id": 100 + i, "op": "sendMessage", "roomId": "r2", "body": "s\(i)"]) }
        // What one socket read brings is handled whole; the next read is not asked for.
        try await Task.sleep(for: .milliseconds(300))
        a.send(json: ["id": 500, "op": "ping"])
        try await Task.sleep(for: .milliseconds(500))
        #expect(!a.hasAnswer(500), "the ping behind 40 held requests was read")
        server.cluster.release(room: "r2")
        for i in 0..<40 { #expect(try await a.answer(Int64(100 + i), timeout: .seconds(10)).errorCode == nil) }
        #expect(try await a.answer(500, timeout: .seconds(10)).errorCode == nil)
        let history = try await a.call("fetchHistory", ["roomId": "r2", "limit": 100])
        let bodies = history["data"]?["messages"]?.array?.compactMap { $0["body"]?.stringValue }.filter { $0.hasPrefix("s") } ?? []
        let sent = (0..<40).map { "s\($0)" }
        #expect(bodies == sent || bodies == sent.reversed(), "\(bodies)")
        await a.close()
    }

    /// Issue 16: when the cluster ends a live connection's session (its edge's lease ran out) the client gets a
    /// `status: lost` event for the room and the edge forgets the session; when the event never reaches the
    /// edge (lost from the feed), the first request the cluster answers 13100 is preceded by that event.
    @Test("issue 16: a session the cluster ended is told `status: lost` before any 13100")
    func aSessionEndedByTheClusterIsToldItIsLost() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let (a, b) = try await server.aliceAndBobInRoom()
        // What a shard leader proposes when this edge's lease ran out, on every shard.
        func expireThisEdge() async throws {
            for shard in 0..<server.cluster.shardCount {
                _ = try await server.cluster.submit(.sessionLost(edgeId: server.cluster.edgeId), shard: shard, actor: .appServer)
            }
        }
        try await expireThisEdge()
        for client in [a, b] {
            let lost = try await client.event("status") { $0["data"]?["status"] == .string("lost") }
            #expect(lost["roomId"] == .string("r1") && lost["seq"] == .int(0))
        }
        try await eventually { await server.edge.counts.sessions == 0 }
        #expect(try await b.call("sendMessage", ["roomId": "r1", "body": "x"]).errorCode == 13100)
        #expect(!a.isClosed && !b.isClosed)
        // Both enter again; then the cluster ends bob's session while the feed loses the event.
        try await a.enter("alice")
        try await b.enter("bob")
        server.cluster.hideNextEntries(server.cluster.shardCount)
        try await expireThisEdge()
        let refused = try await b.call("sendMessage", ["roomId": "r1", "body": "y"])
        #expect(refused.errorCode == 13100)
        _ = try await b.event("status") { $0["data"]?["status"] == .string("lost") }
        try await eventually { await server.edge.counts.sessions <= 1 }
        await a.close()
        await b.close()
    }

    @Test("E10 Q3: disconnect → exit proposed, 302 for the others and 320 PartClear for a transient queue item")
    func disconnectClearsTransient() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let (a, b) = try await server.aliceAndBobInRoom()
        #expect(try await b.call("queueOffer", ["roomId": "r1", "key": "seat", "value": "bob", "transient": true])["ok"] == .bool(true))
        await b.close()
        let clear = try await a.event("notification") { $0["data"]?["type"] == .int(320) }
        #expect(clear["data"]?["ext"]?["change"] == .string("partClear"))
        #expect(clear["data"]?["ext"]?["elements"]?.array?.first?["key"] == .string("seat"))
        _ = try await a.event("notification") { $0["data"]?["type"] == .int(302) }
        #expect(try await a.call("queueList", ["roomId": "r1"])["data"]?["elements"]?.array?.isEmpty == true)
        await a.close()
    }

    @Test("X2: enter with lastSeq replays history before live events (resumed); exit then re-enter")
    func resume() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let a = try await server.client()
        try await a.enter("alice")
        let b = try await server.client()
        try await b.enter("bob")
        _ = try await b.call("sendMessage", ["roomId": "r1", "body": "one"])
        let first = try await a.event("message")
        let lastSeq = first["seq"]?.int ?? 0
        // alice leaves (E10) and misses two messages.
        #expect(try await a.call("exit", ["roomId": "r1"])["ok"] == .bool(true))
        _ = try await b.call("sendMessage", ["roomId": "r1", "body": "two"])
        _ = try await b.call("sendMessage", ["roomId": "r1", "body": "three"])
        _ = try await a.drainEvents()
        let answer = try await a.enter("alice", extra: ["lastSeq": lastSeq])
        #expect(answer["data"]?["resumed"] == .bool(true))
        #expect(answer["data"]?["gapTooOld"] == .bool(false))
        _ = try await b.call("sendMessage", ["roomId": "r1", "body": "four"])
        let events = try await a.drainEvents(after: .milliseconds(500))
        let bodies = events.filter { $0["event"] == .string("message") }.compactMap { $0["data"]?["body"]?.string }
        #expect(bodies == ["two", "three", "four"])
        let seqs = events.compactMap { $0["seq"]?.int }.filter { $0 > 0 }
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count && seqs.first ?? 0 > lastSeq)
        await a.close()
        await b.close()
    }

    @Test("A9 X2: a resume replays at most maxResumeEvents: a wider gap is gapTooOld with the newest ones, anonymous too")
    func resumeIsBounded() async throws {
        var settings = EdgeSettings.testing
        settings.maxResumeEvents = 5
        let server = try await Fixture.server(settings: settings)
        defer { Task { await server.stop() } }
        let b = try await server.client()
        try await b.enter("bob")
        for i in 0..<12 { _ = try await b.call("sendMessage", ["roomId": "r1", "body": "m\(i)"]) }
        // An anonymous enter asking for everything since 0.
        let anon = try await server.client()
        let anonAuth: [String: Any] = ["mode": "anonymous", "appKey": Fixture.app]
        let answer = try await anon.call("enter", ["roomId": "r1", "auth": anonAuth, "nickname": "G", "avatar": "a", "lastSeq": 0])
        let roomSeq = answer["data"]?["room"]?["seq"]?.int ?? 0
        #expect(answer["data"]?["gapTooOld"] == .bool(true) && answer["data"]?["resumed"] == .bool(false), "\(answer)")
        #expect(answer["data"]?["replayFromSeq"]?.int == roomSeq - 4)
        let replayed = try await anon.drainEvents(after: .milliseconds(400)).compactMap { $0["seq"]?.int }.filter { $0 > 0 }
        #expect(replayed.count <= 5 && replayed.allSatisfy { $0 > roomSeq - 5 && $0 <= roomSeq }, "\(replayed) of \(roomSeq)")
        #expect(replayed.contains(roomSeq), "the newest item is replayed")
        // A gap within the bound is resumed whole, as before.
        let near = try await server.client()
        let resumed = try await near.enter("carol", extra: ["lastSeq": roomSeq - 2])
        #expect(resumed["data"]?["resumed"] == .bool(true) && resumed["data"]?["replayFromSeq"]?.int == roomSeq - 1)
        await anon.close(); await near.close(); await b.close()
    }

    /// Issue 16, SPEC F3: a client whose process exits sends FIN and no close frame. Its socket closes at
    /// once and its session ends as a disconnect does: the others get its 302 and the 320 PartClear of its
    /// transient queue element (it used to take the 75 s idle timeout, the socket in CLOSE-WAIT). Unloaded
    /// this takes ~60 ms; the bound here is 5 s so the test holds on a runner busy with every other suite,
    /// and still fails without the fix (75 s).
    @Test("F3 E10 Q3: a half-closed socket ends its session within a second (302, 320 PartClear)")
    func halfClosedSocketEndsItsSessionAtOnce() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let alice = try await server.client()
        try await alice.enter("alice")
        let bob = try StalledClient(port: server.port, receiveBuffer: 1 << 20)
        try bob.send(json: ["id": 1, "op": "hello", "versions": [1]])
        try bob.send(json: ["id": 2, "op": "enter", "roomId": "r1", "auth": Fixture.auth("bob"), "nickname": "Bob"])
        _ = try await alice.event("notification") { $0["data"]?["type"] == .int(301) && $0["data"]?["source"]?["userId"] == .string("bob") }
        try bob.send(json: ["id": 3, "op": "queueOffer", "roomId": "r1", "key": "seat", "value": "bob", "transient": true])
        _ = try await alice.event("notification") { $0["data"]?["type"] == .int(317) }
        let closedAt = ContinuousClock.now
        bob.halfClose()
        _ = try await alice.event("notification", timeout: .seconds(5)) {
            $0["data"]?["type"] == .int(302) && $0["data"]?["source"]?["userId"] == .string("bob")
        }
        _ = try await alice.event("notification", timeout: .seconds(5)) { $0["data"]?["type"] == .int(320) }
        let took = ContinuousClock.now - closedAt
        #expect(took < .seconds(5), "the session ended \(took) after the FIN")
        _ = try await offThePool { try bob.readToEnd(timeout: .seconds(2)) }  // and the server closed its end
        try await eventually { await server.edge.counts.connections == 1 }
        await alice.close()
    }

    @Test("issue 24: after five wrong tokens from one address, even the right one is refused (4017) until the window ends")
    func tokenGuessingIsThrottled() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        for i in 0..<5 {
            let guesser = try await server.client()
            var auth = Fixture.auth("alice")
            auth["token"] = "guess-\(i)"
            #expect(try await guesser.call("enter", ["roomId": "r1", "auth": auth, "nickname": "A"]).errorCode == 4010)
            #expect(try await guesser.closed() == 4401)
        }
        let late = try await server.client()
        let refused = try await late.call("enter", Fixture.enter("alice"))
        #expect(refused.errorCode == 4017, "\(refused)")
        #expect(try await late.closed() == 4401)
    }

    @Test("E3: the 11th room is refused with 13101 across shards; leaving one frees its slot")
    func eleventhRoom() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let ids = ["r1"] + (1...10).map { "room-\($0)" }
        #expect(Set(ids.map { server.cluster.shard(ofRoom: $0) }).count > 1, "the rooms should span shards")
        for id in ids.dropFirst() { try await server.cluster.createRoom(id) }
        let c = try await server.client()
        for id in ids.prefix(10) { try await c.enter("carol", room: id) }
        let refused = try await c.call("enter", Fixture.enter("carol", room: ids[10]))
        #expect(refused.errorCode == 13101)
        #expect(await server.edge.counts.sessions == 10)
        // Another connection of the same user counts the same rooms.
        let d = try await server.client()
        #expect(try await d.call("enter", Fixture.enter("carol", room: ids[10])).errorCode == 13101)
        #expect(try await c.call("exit", ["roomId": ids[0]])["ok"] == .bool(true))
        try await eventually {
            (try? await d.call("enter", Fixture.enter("carol", room: ids[10])))?["ok"] == .bool(true)
        }
        await c.close()
        await d.close()
    }

    @Test("E3 RC one-room policy across shards: entering a room of another shard kicks the first (reason 3) and frees its slot")
    func oneRoomPolicyAcrossShards() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        var policy = AppPolicy()
        policy.oneRoomPerUser = true
        for shard in 0..<server.cluster.shardCount {
            _ = try await server.cluster.submit(.setAppPolicy(policy), shard: shard, actor: .appServer)
        }
        let elsewhere = try #require((1...50).map { "room-\($0)" }.first {
            server.cluster.shard(ofRoom: $0) != server.cluster.shard(ofRoom: "r1")
        })
        try await server.cluster.createRoom(elsewhere)
        let c = try await server.client()
        try await c.enter("carol")
        let d = try await server.client()
        try await d.enter("carol", room: elsewhere)
        let kicked = try await c.event("kicked") { $0["roomId"] == .string("r1") }
        #expect(kicked["data"]?["reason"] == .int(3))
        _ = try await c.event("multiLoginSync") { $0["roomId"] == .string("r1") }
        try await eventually { await server.edge.counts.sessions == 1 }
        #expect(try await c.call("sendMessage", ["roomId": "r1", "body": "still here?"]).errorCode == 13100)
        let home = server.cluster.shard(ofRoom: RoomSlots.homeKey("carol"))
        try await eventually { server.cluster.slotRooms(of: "carol", shard: home) == [elsewhere] }
        await c.close()
        await d.close()
    }

    @Test("E3: while a slot is held the user's home shard is polled too (the edge's lease there); both feeds stop after exit")
    func homeShardFeed() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let roomShard = server.cluster.shard(ofRoom: "r1")
        let user = try #require(["alice", "bob", "carol"].first {
            server.cluster.shard(ofRoom: RoomSlots.homeKey($0)) != roomShard
        })
        let c = try await server.client()
        try await c.enter(user)
        #expect(await server.edge.counts.feeds == 2)
        #expect(try await c.call("exit", ["roomId": "r1"])["ok"] == .bool(true))
        try await eventually { await server.edge.counts.feeds == 0 }
        await c.close()
    }

    @Test("E1: an enter whose outcome was lost (5040) is undone with an exit, so no session outlives it")
    func enterOutcomeLost() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        server.cluster.loseNextEnterOutcome()
        let c = try await server.client()
        #expect(try await c.call("enter", Fixture.enter("bob")).errorCode == 5040)
        try await eventually {
            guard let out = try? await server.cluster.asAppServer(
                .fetchMembersByIds(RoomUsers(roomId: "r1", userIds: ["bob"])), room: "r1"),
                  case .success(.members(let members)) = out.result else { return false }
            return members.allSatisfy { !$0.isOnline }
        }
        // The connection is usable: the retried enter works.
        try await c.enter("bob")
        await c.close()
    }

    @Test("X2: events the feed lost are filled from history, so seqs stay strictly increasing with no holes")
    func gapFilledFromHistory() async throws {
        let server = try await Fixture.server()
        defer { Task { await server.stop() } }
        let (a, b) = try await server.aliceAndBobInRoom()
        _ = try await b.call("sendMessage", ["roomId": "r1", "body": "before"])
        _ = try await a.event("message")
        server.cluster.hideNextEntries(2)
        _ = try await b.call("sendMessage", ["roomId": "r1", "body": "lost1"])
        _ = try await b.call("sendMessage", ["roomId": "r1", "body": "lost2"])
        _ = try await b.call("sendMessage", ["roomId": "r1", "body": "after"])
        var bodies: [String] = []
        var seqs: [Int64] = []
        for _ in 0..<3 {
            let m = try await a.event("message")
            bodies.append(m["data"]?["body"]?.string ?? "")
            seqs.append(m["seq"]?.int ?? 0)
        }
        #expect(bodies == ["lost1", "lost2", "after"])
        #expect(seqs == [seqs[0], seqs[0] + 1, seqs[0] + 2])
        await a.close()
        await b.close()
    }
}
