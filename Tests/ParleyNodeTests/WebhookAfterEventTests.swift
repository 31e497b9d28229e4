import Foundation
import ParleyClient
import ParleyNode
import ParleyPlacement
import ParleyRooms
import ParleyWire
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// SPEC W2 / W4 / W5 on three real `parley node` processes and the verifying receiver
/// (`cluster/webhooks/receiver.py`): what happens in an app's rooms reaches its app server signed, each event
/// with a stable id, in order per room, at least once — across a receiver that is down, a `kill -9` of the
/// delivering leader and a restart of every node — and what waits too long is dropped and counted.
@Suite(.serialized, .timeLimit(.minutes(6))) struct WebhookAfterEventTests {
    static let api = WebhookPreSendTests.api
    static let allRoomEvents = ["room.message", "room.enter", "room.exit", "room.create", "room.close", "room.update",
                                "room.role", "room.mute", "room.queue"]

    static func events(port: Int) async throws -> [[String: Any]] {
        let (data, _) = try await ToolHTTP.shared.data(from: URL(string: "http://127.0.0.1:\(port)/events")!)
        return try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
    }

    /// Makes the receiver answer after-event calls with `status` (503: an app server that is down), with `pad`
    /// bytes more in the body.
    static func answer(_ status: Int, pad: Int = 0, port: Int) async throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/control")!)
        request.httpMethod = "POST"
        request.httpBody = try JSONSerialization.data(withJSONObject: ["status": status, "pad": pad])
        _ = try await ToolHTTP.shared.data(for: request)
    }

    static func setWebhooks(_ http: String, port: Int, events: [String] = allRoomEvents) async throws {
        let set = try await api.post(http, "/v1/app/setWebhooks", ["url": "http://127.0.0.1:\(port)/parley", "events": events])
        #expect(set.status == 200, "\(set.json)")
    }

    /// The shard of one of the app's rooms.
    static func shard(ofRoom room: String) -> ShardID {
        ShardMap(shardCount: 16).shard(ofRoom: AppScope.scoped(room, in: api.appKey))
    }

    /// Waits until the shards keep copies: a probe room made until the receiver hears of one. With `room`, the
    /// probes are rooms of that room's shard: a shard keeps copies from when its leader subscribed it (within
    /// about a second of `setWebhooks`, later on a loaded machine), and each shard subscribes on its own.
    static func waitForCopies(_ cluster: LocalCluster, port: Int, sameShardAs room: String? = nil, via node: UInt64 = 1)
        async throws {
        let http = cluster.http(node)
        // Probe rooms of this wait's own: a second wait in one test must not take the first one's probes as heard.
        let tag = String(UInt32.random(in: 0 ... .max), radix: 36)
        var probes = 0
        var made: Set<String> = []
        try await cluster.eventually("the receiver to hear of a room made\(room.map { " in the shard of \($0)" } ?? "")",
                                     seconds: 30) {
            let heard = (try? await events(port: port))?.contains {
                $0["event"] as? String == "room.create" && made.contains($0["roomId"] as? String ?? "")
            } == true
            if heard { return true }
            probes += 1
            if let room { while shard(ofRoom: "probe-\(tag)-\(probes)") != shard(ofRoom: room) { probes += 1 } }
            made.insert("probe-\(tag)-\(probes)")
            _ = try? await api.post(http, "/v1/room/create", ["roomId": "probe-\(tag)-\(probes)", "creator": "ann", "name": "p"])
            try? await Task.sleep(for: .milliseconds(400))
            return false
        }
    }

    static func roomEvents(_ all: [[String: Any]], _ room: String) -> [[String: Any]] {
        all.filter { $0["roomId"] as? String == room }
    }

    static func bodies(_ all: [[String: Any]], _ room: String) -> [String] {
        roomEvents(all, room).compactMap { ($0["message"] as? [String: Any])?["body"] as? String }
    }

    /// The verifying receiver and three nodes that may call it, with `users` made: `body` gets the cluster and
    /// the receiver's port.
    static func withReceiver(users: [String], extraArguments: [String] = [],
                             _ body: @escaping (LocalCluster, Int) async throws -> Void) async throws {
        let (receiver, port) = try await WebhookPreSendTests.listeningReceiver()
        defer {
            kill(receiver.processIdentifier, SIGKILL)
            receiver.waitUntilExit()
        }
        try await withLocalCluster(extraArguments: ["--app", "hooks:\(api.secret)", "--webhook-allow", "127.0.0.1"] + extraArguments) { cluster in
            try cluster.startAll()
            try await cluster.waitForSignedAPI(api)
            for user in users {
                #expect(try await api.post(cluster.http(1), "/v1/user/create", ["accid": user, "token": "\(user)-token"]).status == 200)
            }
            try await body(cluster, port)
        }
    }

    /// W2: the messages of a room arrive in its sequence order (first delivery of each).
    static func inSequenceOrder(_ all: [[String: Any]], _ room: String) -> Bool {
        let seqs = roomEvents(all, room).compactMap { e -> Int? in e["event"] as? String == "room.message" ? e["seq"] as? Int : nil }
        return zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }
    }

    @Test func W2_everyKindOfRoomEventReachesTheAppServerSignedAndInOrder() async throws {
        try await Self.withReceiver(users: ["ann", "bob", "cat"]) { cluster, port in
            let http = cluster.http(1)
            let room = "lobby"
            try await Self.setWebhooks(http, port: port)
            try await Self.waitForCopies(cluster, port: port, sameShardAs: room)

            #expect(try await Self.api.post(http, "/v1/room/create", ["roomId": room, "creator": "ann", "name": "Lobby"]).status == 200)
            var configuration = ChatroomClient.Configuration.addresses([cluster.clientAddress(cluster.ids[1])])
            configuration.requestTimeout = .seconds(6)
            func client(_ user: String) async throws -> ChatroomClient {
                let c = ChatroomClient(configuration: configuration)
                try await c.enterChatroom(ChatroomEnterRequest(
                    roomId: room, auth: .independent(appKey: Self.api.appKey, account: user, token: "\(user)-token"),
                    nickname: user.capitalized))
                return c
            }
            let ann = try await client("ann")
            for i in 0..<20 { _ = try await ann.sendMessage(room, body: "m\(i)") }
            #expect(try await Self.api.post(http, "/v1/room/update", ["roomId": room, "name": "Quiet lobby"]).status == 200)
            #expect(try await Self.api.post(http, "/v1/room/update", ["roomId": room, "announcement": "hi", "needNotify": true]).status == 200)
            #expect(try await Self.api.post(http, "/v1/member/setRole", ["roomId": room, "accid": "bob", "role": "manager", "enable": true]).status == 200)
            #expect(try await Self.api.post(http, "/v1/member/tempMute", ["roomId": room, "accid": "bob", "seconds": 60]).status == 200)
            #expect(try await Self.api.post(http, "/v1/queue/offer", ["roomId": room, "key": "k1", "value": "v1"]).status == 200)
            try await ann.exitChatroom(room)
            await ann.close()
            let bob = try await client("bob")
            #expect(try await Self.api.post(http, "/v1/member/kick", ["roomId": room, "accid": "bob"]).status == 200)
            await bob.close()
            let cat = try await client("cat")
            defer { Task { await cat.close() } }
            #expect(try await Self.api.post(http, "/v1/room/toggleClose", ["roomId": room, "valid": false]).status == 200)

            func describe(_ e: [String: Any]) -> String {
                let event = e["event"] as? String ?? "?"
                switch event {
                case "room.message": return "message \((e["message"] as? [String: Any])?["body"] as? String ?? "")"
                case "room.enter", "room.create": return "\(event) \(e["userId"] as? String ?? "")"
                case "room.exit": return "exit \(e["userId"] as? String ?? "") \(e["reason"] as? String ?? "")"
                default:
                    guard let n = e["notification"] as? [String: Any] else { return event }
                    return "\(event) \(n["type"] as? Int ?? 0) \(n["announced"] as? Bool ?? false)"
                }
            }
            // Beyond the back-off's 30 s ceiling: a call that failed under a loaded machine is made again in time.
            var got: [[String: Any]] = []
            do {
                try await cluster.eventually("every event of the room to arrive", seconds: 60) {
                    got = Self.roomEvents((try? await Self.events(port: port)) ?? [], room)
                    return got.contains { $0["event"] as? String == "room.exit" && $0["reason"] as? String == "closed" }
                }
            } catch {
                let calls = (try? await WebhookPreSendTests.calls(port: port))?.count ?? -1
                let webhooks = await cluster.statuses().sorted { $0.key < $1.key }.map { "node \($0.key): \(String(describing: $0.value.webhooks))" }
                let leader = await cluster.leader(ofShard: Self.shard(ofRoom: room))
                Issue.record("arrived: \(got.map(describe)); calls: \(calls); shard \(Self.shard(ofRoom: room)) led by \(String(describing: leader)); \(webhooks)")
                throw error
            }
            let expected = ["room.create ann", "room.enter ann"] + (0..<20).map { "message m\($0)" } + [
                "room.update", "room.update 312 true", "room.role 307 true", "room.mute 314 true", "room.queue 317 true",
                "exit ann exit", "room.enter bob", "exit bob kicked", "room.enter cat", "room.close 311 true", "exit cat closed",
            ]
            #expect(got.map(describe) == expected)
            #expect(Self.inSequenceOrder(got, room))
            // Stable, distinct ids; the room's own id (the namespace stripped); every call signed by the app's secret.
            let ids = got.compactMap { $0["id"] as? String }
            #expect(Set(ids).count == got.count && ids.count == got.count)
            let calls = try await WebhookPreSendTests.calls(port: port)
            #expect(!calls.isEmpty && calls.allSatisfy { $0["verified"] as? Bool == true })
            #expect(calls.allSatisfy { ($0["call"] as? [String: Any])?["appKey"] as? String == Self.api.appKey })
        }
    }

    /// W2: a shard's new leader that has not yet read the app's webhook settings (a node reads them every 2 s)
    /// keeps the box its predecessor made. Before, it took its stale view for the app's word, removed the box with
    /// its copies and kept no event of the app's rooms until its next read (session 50).
    @Test func W2_aNewLeaderThatHasNotReadTheSettingsYetKeepsTheBox() async throws {
        try await Self.withReceiver(users: ["ann"]) { cluster, port in
            let room = "lobby"
            let shard = Self.shard(ofRoom: room)
            #expect(try await Self.api.post(cluster.http(1), "/v1/room/create", ["roomId": room, "creator": "ann", "name": "L"]).status == 200)
            var leader: UInt64 = 0
            try await cluster.eventually("a leader of shard \(shard)", seconds: 10) {
                leader = await cluster.leader(ofShard: shard) ?? 0
                return leader != 0
            }
            let voters = try #require(try await cluster.status(leader).shards.first { $0.shard == shard }?.voters)
            let stale = try #require(voters.first { $0 != leader })
            let api = try #require(cluster.ids.first { $0 != stale })
            // The webhooks go on while `stale` stands still: it reads them 2 s after its first look once it runs.
            cluster.pause(stale)
            var paused = true
            defer { if paused { cluster.resume(stale) } }
            try await Self.setWebhooks(cluster.http(api), port: port)
            try await Self.waitForCopies(cluster, port: port, sameShardAs: room, via: api)
            cluster.resume(stale)
            paused = false
            var transfer = ByteWriter()
            transfer.write(shard)
            transfer.write(stale)
            try await cluster.eventually("node \(stale) to lead shard \(shard)", seconds: 10) {
                if await cluster.leader(ofShard: shard) == stale { return true }
                _ = try? await cluster.call("/rpc/v1/transfer", body: transfer.bytes, via: leader)
                try? await Task.sleep(for: .milliseconds(100))
                return false
            }
            let bodies = (0..<10).map { "after the move \($0)" }
            for body in bodies {
                let sent = try await Self.api.post(cluster.http(api), "/v1/message/send",
                                                   ["roomId": room, "fromAccid": "ann", "type": "text", "body": body])
                #expect(sent.status == 200, "\(sent.json)")
            }
            do {
                try await cluster.eventually("the messages sent after the move", seconds: 20) {
                    Set(Self.bodies((try? await Self.events(port: port)) ?? [], room)).isSuperset(of: bodies)
                }
            } catch {
                let webhooks = await cluster.statuses().sorted { $0.key < $1.key }.map { "node \($0.key): \(String(describing: $0.value.webhooks))" }
                Issue.record("arrived: \(Self.bodies((try? await Self.events(port: port)) ?? [], room)); \(webhooks)")
                throw error
            }
            let dropped = try await cluster.status(stale).webhooks?.first { $0.app == Self.api.appKey }?.afterEvents?.dropped ?? 0
            #expect(dropped == 0, "node \(stale) dropped \(dropped) copies")
        }
    }

    /// W2 / W4: an app that turns its after-event callbacks off has its boxes removed; what waited in them is
    /// dropped and counted, and nothing more is kept. The leader narrows a box only on a view of the settings it
    /// read once its meta replica caught up (the test above), so this must still happen, and promptly.
    @Test func W2_callbacksTurnedOffDropWhatWaitsAndKeepNothingMore() async throws {
        try await Self.withReceiver(users: ["ann"]) { cluster, port in
            let http = cluster.http(1)
            let room = "muted"
            try await Self.setWebhooks(http, port: port, events: ["room.create", "room.message"])
            try await Self.waitForCopies(cluster, port: port, sameShardAs: room)
            #expect(try await Self.api.post(http, "/v1/room/create", ["roomId": room, "creator": "ann", "name": "m"]).status == 200)
            // The app server is down: five messages wait on the room's shard.
            try await Self.answer(503, port: port)
            for i in 0..<5 {
                #expect(try await Self.api.post(http, "/v1/message/send", ["roomId": room, "fromAccid": "ann", "type": "text", "body": "w\(i)"]).status == 200)
            }
            func figures() async -> (backlog: Int, dropped: Int) {
                var out = (backlog: 0, dropped: 0)
                for id in cluster.ids {
                    let after = (try? await cluster.status(id))?.webhooks?.first { $0.app == Self.api.appKey }?.afterEvents
                    out.backlog += after?.backlog ?? 0
                    out.dropped += after?.dropped ?? 0
                }
                return out
            }
            try await cluster.eventually("the five messages waiting", seconds: 10) { await figures().backlog >= 5 }
            #expect(try await Self.api.post(http, "/v1/app/removeWebhooks", [:] as [String: Any]).status == 200)
            let began = ContinuousClock.now
            // The five messages at least: the room's creation may have reached the app server before it went down.
            try await cluster.eventually("the box removed, what waited dropped and counted", seconds: 10) {
                await figures().dropped >= 5
            }
            print("the box went \(began.duration(to: .now)) after the callbacks went off")
            // W5: the backlog shows none as soon as the box is gone (not its last figure until it went stale, 5 s).
            #expect(await figures().backlog == 0)
            // Nothing more is kept: with callbacks on again and the app server up, only what happens from then on
            // arrives.
            try await Self.answer(200, port: port)
            #expect(try await Self.api.post(http, "/v1/message/send", ["roomId": room, "fromAccid": "ann", "type": "text", "body": "while off"]).status == 200)
            try await Self.setWebhooks(http, port: port, events: ["room.create", "room.message"])
            try await Self.waitForCopies(cluster, port: port, sameShardAs: room)
            #expect(try await Self.api.post(http, "/v1/message/send", ["roomId": room, "fromAccid": "ann", "type": "text", "body": "on again"]).status == 200)
            try await cluster.eventually("the message sent once the callbacks were on again", seconds: 20) {
                Self.bodies((try? await Self.events(port: port)) ?? [], room).contains("on again")
            }
            #expect(Self.bodies(try await Self.events(port: port), room) == ["on again"])
        }
    }

    @Test func W2_oneToOneAndTeamMessagesReachTheAppServerOnceInConversationOrder() async throws {
        try await Self.withReceiver(users: ["ann", "bob", "cat"]) { cluster, port in
            let http = cluster.http(1)
            #expect(try await Self.api.post(http, "/v1/team/create", ["tid": "crew", "owner": "ann", "tname": "Crew",
                                                                      "members": ["bob", "cat"], "beinvitemode": 1]).status == 200)
            try await Self.setWebhooks(http, port: port, events: ["room.create", "im.p2p", "im.team"])
            try await Self.waitForCopies(cluster, port: port)
            for i in 0..<10 {
                let p2p = try await Self.api.post(http, "/v1/msg/sendMsg", ["from": "ann", "to": "bob", "body": "p\(i)", "msgId": "p-\(i)"])
                #expect(p2p.status == 200, "\(p2p.json)")
                let team = try await Self.api.post(http, "/v1/team/sendMsg", ["tid": "crew", "from": "cat", "body": "t\(i)", "msgId": "t-\(i)"])
                #expect(team.status == 200, "\(team.json)")
            }
            // A resend (same msgId) stores nothing new and is not told again.
            #expect(try await Self.api.post(http, "/v1/msg/sendMsg", ["from": "ann", "to": "bob", "body": "p0", "msgId": "p-0"]).status == 200)
            var p2p: [[String: Any]] = [], team: [[String: Any]] = []
            try await cluster.eventually("every one-to-one and team message to arrive", seconds: 20) {
                let all = (try? await Self.events(port: port)) ?? []
                p2p = all.filter { $0["event"] as? String == "im.p2p" }
                team = all.filter { $0["event"] as? String == "im.team" }
                return p2p.count >= 10 && team.count >= 10
            }
            try await Task.sleep(for: .seconds(1))
            let all = try await Self.events(port: port)
            p2p = all.filter { $0["event"] as? String == "im.p2p" }
            team = all.filter { $0["event"] as? String == "im.team" }
            func bodies(_ es: [[String: Any]]) -> [String] { es.compactMap { ($0["message"] as? [String: Any])?["body"] as? String } }
            #expect(bodies(p2p) == (0..<10).map { "p\($0)" })
            #expect(bodies(team) == (0..<10).map { "t\($0)" })
            #expect(p2p.allSatisfy { $0["to"] as? String == "bob" && ($0["message"] as? [String: Any])?["from"] as? String == "ann" })
            #expect(team.allSatisfy { $0["teamId"] as? String == "crew" && ($0["message"] as? [String: Any])?["from"] as? String == "cat" })
            for es in [p2p, team] {
                let seqs = es.compactMap { $0["seq"] as? Int }
                #expect(seqs.count == es.count && zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 })
            }
        }
    }

    @Test func W2_aDownAppServerAKilledLeaderAndAFullRestartLoseNothing() async throws {
        var (receiver, port) = try await WebhookPreSendTests.listeningReceiver()
        defer {
            kill(receiver.processIdentifier, SIGKILL)
            receiver.waitUntilExit()
        }
        try await withLocalCluster(extraArguments: ["--app", "hooks:\(Self.api.secret)", "--webhook-allow", "127.0.0.1"]) { cluster in
            try cluster.startAll()
            try await cluster.waitForSignedAPI(Self.api)
            let http = cluster.http(1)
            #expect(try await Self.api.post(http, "/v1/user/create", ["accid": "ann", "token": "ann-token"]).status == 200)
            try await Self.setWebhooks(http, port: port, events: ["room.message"])
            // Copies are kept once a shard's leader made the app's box: a room.message probe shows it.
            let room = "stream"
            #expect(try await Self.api.post(http, "/v1/room/create", ["roomId": room, "creator": "ann", "name": "s"]).status == 200)
            var probes = 0
            try await cluster.eventually("the receiver to hear of a message", seconds: 30) {
                probes += 1
                _ = try? await Self.api.post(http, "/v1/message/send", ["roomId": room, "fromAccid": "ann", "type": "text", "body": "probe \(probes)"])
                try? await Task.sleep(for: .milliseconds(300))
                return !Self.bodies((try? await Self.events(port: port)) ?? [], room).isEmpty
            }
            func send(_ bodies: some Sequence<String>) async throws {
                for body in bodies {
                    let sent = try await Self.api.post(cluster.http(cluster.ids.randomElement()!), "/v1/message/send",
                                                       ["roomId": room, "fromAccid": "ann", "type": "text", "body": body])
                    #expect(sent.status == 200, "\(sent.json)")
                }
            }
            // The app server is down for 30 s (its process gone: connections refused) while 100 messages go in;
            // the shard's leader is killed with them waiting.
            kill(receiver.processIdentifier, SIGKILL)
            receiver.waitUntilExit()
            let down = Date()
            try await send((0..<100).map { "a\($0)" })
            let shard = ShardMap(shardCount: 16).shard(ofRoom: AppScope.scoped(room, in: Self.api.appKey))
            let leader = try #require(await cluster.leader(ofShard: shard))
            // W5: the backlog shows on the leader's /status.
            try await cluster.eventually("the backlog on /status", seconds: 10) {
                let w = (try? await cluster.status(leader))?.webhooks?.first { $0.app == Self.api.appKey }
                return (w?.afterEvents?.backlog ?? 0) >= 100 && (w?.afterEvents?.failedCalls ?? 0) > 0
            }
            cluster.kill9(leader)
            try await Task.sleep(for: .seconds(max(0, 30 - Date().timeIntervalSince(down))))
            receiver = try WebhookPreSendTests.startReceiver(port: port)
            let expectedA = (0..<100).map { "a\($0)" }
            // The back-off reaches 30 s: the new leader calls again within that.
            try await cluster.eventually("the backlog after the leader died and the app server came back", seconds: 45) {
                Set(Self.bodies((try? await Self.events(port: port)) ?? [], room)).isSuperset(of: expectedA)
            }
            try cluster.start(leader)
            try await cluster.waitForLeaders()

            // A full restart with 50 messages waiting: every node killed, then started again.
            try await Self.answer(503, port: port)
            try await send((0..<50).map { "b\($0)" })
            for id in cluster.ids { cluster.kill9(id) }
            for id in cluster.ids { try cluster.start(id) }
            try await cluster.waitForLeaders()
            try await Self.answer(200, port: port)
            let expectedB = (0..<50).map { "b\($0)" }
            try await cluster.eventually("the backlog after a full restart", seconds: 60) {
                Set(Self.bodies((try? await Self.events(port: port)) ?? [], room)).isSuperset(of: expectedB)
            }
            let all = try await Self.events(port: port)
            let bodies = Self.bodies(all, room).filter { !$0.hasPrefix("probe") }
            #expect(bodies == expectedA + expectedB, "\(bodies.prefix(10)) … \(bodies.count)")
            #expect(Self.inSequenceOrder(all, room))
        }
    }

    @Test func W4_aFailingAnswerIsCalledAgainAndAny2xxTakesTheEvents() async throws {
        try await Self.withReceiver(users: ["ann"]) { cluster, port in
            let http = cluster.http(1)
            try await Self.setWebhooks(http, port: port)
            try await Self.waitForCopies(cluster, port: port)
            let room = "bumpy"
            #expect(try await Self.api.post(http, "/v1/room/create", ["roomId": room, "creator": "ann", "name": "b"]).status == 200)
            // A redirect is not followed and a 500 is no answer: the events wait, the calls are counted as failed.
            func failedCalls() async -> Int {
                var n = 0
                for id in cluster.ids {
                    n += (try? await cluster.status(id))?.webhooks?.first { $0.app == Self.api.appKey }?.afterEvents?.failedCalls ?? 0
                }
                return n
            }
            for status in [302, 500] {
                try await Self.answer(status, port: port)
                let before = await failedCalls()
                #expect(try await Self.api.post(http, "/v1/message/send", ["roomId": room, "fromAccid": "ann", "type": "text", "body": "\(status)"]).status == 200)
                try await cluster.eventually("a failed call after \(status)", seconds: 20) { await failedCalls() > before }
            }
            #expect(Self.bodies(try await Self.events(port: port), room).isEmpty)
            // A 200 with a 10 MB body takes them (the body is read and dropped), once each, in order.
            try await Self.answer(200, pad: 10 << 20, port: port)
            try await cluster.eventually("the waiting events after the app server recovered", seconds: 45) {
                Self.bodies((try? await Self.events(port: port)) ?? [], room).count >= 2
            }
            try await Task.sleep(for: .seconds(1))
            #expect(Self.bodies(try await Self.events(port: port), room) == ["302", "500"])
        }
    }

    @Test func W4_copiesOlderThanTheLimitAreDroppedAndCounted() async throws {
        try await Self.withReceiver(users: ["ann"], extraArguments: ["--webhook-drop-after", "10"]) { cluster, port in
            let http = cluster.http(1)
            try await Self.setWebhooks(http, port: port)
            try await Self.waitForCopies(cluster, port: port)
            let room = "old"
            #expect(try await Self.api.post(http, "/v1/room/create", ["roomId": room, "creator": "ann", "name": "o"]).status == 200)
            try await cluster.eventually("the room's creation to arrive", seconds: 10) {
                !Self.roomEvents((try? await Self.events(port: port)) ?? [], room).isEmpty
            }
            try await Self.answer(503, port: port)
            for i in 0..<5 {
                #expect(try await Self.api.post(http, "/v1/message/send", ["roomId": room, "fromAccid": "ann", "type": "text", "body": "late \(i)"]).status == 200)
            }
            // Past 10 s the five go unsent, counted on the leader's /status and /metrics.
            try await cluster.eventually("the dropped copies on /status", seconds: 40) {
                var dropped = 0
                for id in cluster.ids {
                    dropped += (try? await cluster.status(id))?.webhooks?.first { $0.app == Self.api.appKey }?.afterEvents?.dropped ?? 0
                }
                return dropped >= 5
            }
            var scraped = 0.0
            for id in cluster.ids {
                let (body, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(id) + "/metrics")!)
                for line in String(decoding: body, as: UTF8.self).split(separator: "\n")
                where line.hasPrefix("parley_webhook_events_total{") && line.contains("outcome=\"dropped\"") {
                    scraped += Double(line.split(separator: " ").last ?? "") ?? 0
                }
            }
            #expect(scraped >= 5)
            try await Self.answer(200, port: port)
            #expect(try await Self.api.post(http, "/v1/message/send", ["roomId": room, "fromAccid": "ann", "type": "text", "body": "fresh"]).status == 200)
            try await cluster.eventually("the fresh message to arrive", seconds: 20) {
                Self.bodies((try? await Self.events(port: port)) ?? [], room).contains("fresh")
            }
            #expect(Self.bodies(try await Self.events(port: port), room) == ["fresh"])
        }
    }
}
