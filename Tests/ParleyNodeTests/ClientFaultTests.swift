import Foundation
import Testing
import ParleyClient
import ParleyCluster

import ParleyRooms
import ParleyPlacement

/// Collects a client's events as they arrive.
actor FaultEventRecorder {
    private(set) var events: [ChatroomEvent] = []
    private var task: Task<Void, Never>?

    init(_ client: ChatroomClient) {
        let stream = client.events
        Task { await self.consume(stream) }
    }

    private func consume(_ stream: AsyncStream<ChatroomEvent>) async {
        for await event in stream { events.append(event) }
    }

    /// Chat messages of a room, in arrival order.
    func messages(in roomId: String) -> [ParleyClient.Message] {
        events.compactMap { if case .message(let r, let m) = $0, r == roomId { m } else { nil } }
    }

    func states(of roomId: String) -> [ConnectionState] {
        events.compactMap { if case .connectionState(let r, let s) = $0, r == roomId { s } else { nil } }
    }
}

/// Issue 5 faults end to end: real `parley node` processes, clients through the Swift SDK over WebSocket.
@Suite(.serialized, .timeLimit(.minutes(6))) struct ClientFaultTests {
    static let app = "e2e-app"

    /// `budgeted`: keep the app's default send budget (A1), so sends take the leader-only road.
    static func prepare(_ cluster: LocalCluster, users: [String], room: String, budgeted: Bool = false) async throws {
        try cluster.startAll()
        try await cluster.waitForLeaders()
        try await cluster.meta(.putApp(cluster.secrets.app(app, secret: String(repeating: "e", count: 32))))
        for u in users { try await cluster.meta(.putUser(cluster.secrets.user(appKey: app, account: u, token: "tok-\(u)"))) }
        if !budgeted { try await cluster.unlimitedSends(app: app) }
        // A cluster tool names the room as the cluster knows it: in its app's namespace (A8).
        let scoped = AppScope.scoped(room, in: app)
        _ = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: users[0], name: "E2E")), room: scoped, via: 1)
    }

    static func client(_ cluster: LocalCluster, via nodes: [UInt64]) -> ChatroomClient {
        var config = ChatroomClient.Configuration.addresses(nodes.map { cluster.clientAddress($0) })
        config.reconnectDelay = .milliseconds(200)
        return ChatroomClient(configuration: config)
    }

    static func enter(_ client: ChatroomClient, _ user: String, _ room: String, retryCount: Int = 3) async throws {
        try await client.enterChatroom(ChatroomEnterRequest(
            roomId: room, auth: .independent(appKey: app, account: user, token: "tok-\(user)"),
            nickname: user, avatar: "https://a/\(user)", retryCount: retryCount))
    }

    /// Sends until acknowledged, resending with the same clientMessageId after a lost answer (the room
    /// de-duplicates it), for at most `seconds`.
    static func sendAcked(_ client: ChatroomClient, _ room: String, body: String, id: String,
                          seconds: Double = 30) async throws -> Int64 {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            do {
                return try await client.sendMessage(room, body: body, clientMessageId: id).seq
            } catch let error as ChatroomError where error.code == ChatroomError.rateLimited && Date() < deadline {
                // A1: over the connection's request budget; wait as told and resend (the same id).
                try await Task.sleep(for: .milliseconds(error.retryAfterMs ?? 10))
            } catch let error as ChatroomError where Date() < deadline
                && [5030, 5040, ChatroomError.timeout, ChatroomError.connectionLost, ChatroomError.notEntered].contains(error.code) {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    static func waitFor(_ what: String, seconds: Double = 30, _ check: () async -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !(await check()) {
            guard Date() < deadline else { throw LocalClusterError.failed("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Kill -9 the leader of a busy room's shard while two clients send 1,000 messages each: both end with the
    /// same complete sequence of every acknowledged message, in the same order, without duplicates.
    @Test func killingTheShardLeaderLosesNoAcknowledgedMessageAndDuplicatesNone() async throws {
        try await withLocalCluster { cluster in
        let room = "e2e-busy"
        try await Self.prepare(cluster, users: ["carol", "dave"], room: room)
        let shard = ShardMap(shardCount: 16).shard(ofRoom: AppScope.scoped(room, in: Self.app))
        let leader = try #require(await cluster.leader(ofShard: shard))
        let edges = cluster.ids.filter { $0 != leader }
        let carol = Self.client(cluster, via: [edges[0]]), dave = Self.client(cluster, via: [edges[1]])
        let (rc, rd) = (FaultEventRecorder(carol), FaultEventRecorder(dave))
        try await Self.enter(carol, "carol", room)
        try await Self.enter(dave, "dave", room)
        let perClient = 1_000
        func load(_ client: ChatroomClient, _ name: String) async throws -> [Int64] {
            var acked: [Int64] = []
            for i in 0..<perClient {
                acked.append(try await Self.sendAcked(client, room, body: "\(name)-\(i)", id: "\(name)-\(i)"))
            }
            return acked
        }
        async let c = load(carol, "carol")
        async let d = load(dave, "dave")
        let killer = Task {
            try await Self.waitFor("300 messages") { await rc.messages(in: room).count >= 300 }
            cluster.kill9(leader)
            return await rc.messages(in: room).count
        }
        let (ackedC, ackedD) = try await (c, d)
        // The leader died mid-load, not after it.
        #expect(try await killer.value < 2 * perClient)
        let acked = Set(ackedC + ackedD)
        #expect(acked.count == 2 * perClient)
        try await Self.waitFor("every acknowledged message to arrive at both", seconds: 60) {
            let a = await rc.messages(in: room), b = await rd.messages(in: room)
            return Set(a.map(\.seq)).isSuperset(of: acked) && Set(b.map(\.seq)).isSuperset(of: acked)
        }
        let seenC = await rc.messages(in: room), seenD = await rd.messages(in: room)
        let common = min(seenC.count, seenD.count)
        #expect(Array(seenC.prefix(common)).map(\.seq) == Array(seenD.prefix(common)).map(\.seq))
        for seen in [seenC, seenD] {
            #expect(seen.map(\.seq) == seen.map(\.seq).sorted(), "in order")
            #expect(Set(seen.map(\.seq)).count == seen.count, "no duplicate seq")
            #expect(Set(seen.map(\.clientMessageId)).count == seen.count, "no message sent twice")
        }
        await carol.close(); await dave.close()
        }
    }

    /// A budgeted message (A1: appended only by the shard's leader) sent right after the leader's kill -9, through
    /// either survivor, is acknowledged — not refused 5030 after the 5 s route deadline. CI (deployed, k8s) caught
    /// the road that forwarded to the dead leader, then asked the replicas in turn without ever proposing on
    /// the node it ran on: when that node won the election, the message waited out the deadline.
    @Test func aBudgetedSendRightAfterTheLeadersKillIsAcknowledgedThroughEitherSurvivor() async throws {
        try await withLocalCluster { cluster in
        let room = "e2e-budgeted"
        try await Self.prepare(cluster, users: ["carol", "dave"], room: room, budgeted: true)
        let shard = ShardMap(shardCount: 16).shard(ofRoom: AppScope.scoped(room, in: Self.app))
        let leader = try #require(await cluster.leader(ofShard: shard))
        let edges = cluster.ids.filter { $0 != leader }
        var clients: [ChatroomClient] = []
        for (edge, user) in zip(edges, ["carol", "dave"]) {
            var config = ChatroomClient.Configuration.addresses([cluster.clientAddress(edge)])
            config.requestTimeout = .seconds(20)
            let client = ChatroomClient(configuration: config)
            try await Self.enter(client, user, room)
            _ = try await client.sendMessage(room, body: "\(user) before")
            clients.append(client)
        }
        cluster.kill9(leader)
        let answers = await withTaskGroup(of: (UInt64, String, Duration).self) { group in
            for (edge, client) in zip(edges, clients) {
                group.addTask {
                    let began = ContinuousClock.now
                    do {
                        _ = try await client.sendMessage(room, body: "after the kill via \(edge)")
                        return (edge, "ok", ContinuousClock.now - began)
                    } catch {
                        return (edge, "\(error)", ContinuousClock.now - began)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for (edge, answer, took) in answers {
            #expect(answer == "ok", "via node \(edge): \(answer) after \(took)")
        }
        for client in clients { await client.close() }
        }
    }

    /// Issue 16, fault 1: the leader of a room's shard is paused (SIGSTOP) for 10 s while a client on a
    /// healthy edge sends every 50 ms and another listens on the third node. No session of either ends: no
    /// `lost` status, no exit (302) about them, no reconnect, no 13100; sends fail over and succeed again
    /// after the pause; every acknowledged message reaches the listener once, in order. Before the lease rule
    /// (docs/cluster.md, "Edge leases") the new leader evicted both about 7 s after the pause.
    @Test func pausingTheShardLeaderEndsNoSessionOnAHealthyEdge() async throws {
        try await withLocalCluster { cluster in
        let room = "e2e-pause"
        try await Self.prepare(cluster, users: ["erin", "fay"], room: room)
        let shard = ShardMap(shardCount: 16).shard(ofRoom: AppScope.scoped(room, in: Self.app))
        let leader = try #require(await cluster.leader(ofShard: shard))
        let edges = cluster.ids.filter { $0 != leader }
        let erin = Self.client(cluster, via: [edges[0]]), fay = Self.client(cluster, via: [edges[1]])
        let (re, rf) = (FaultEventRecorder(erin), FaultEventRecorder(fay))
        try await Self.enter(erin, "erin", room)
        try await Self.enter(fay, "fay", room)
        // Erin sends every 50 ms until told to stop. The pause starts once 40 went through and the sender stops
        // once 40 more went through after the resume: conditions, not a count reached in fixed time (issue 32).
        let progress = SendProgress()
        let sender = Task { () -> (codes: [Int], lastOK: Int) in
            var codes: [Int] = [], lastOK = 0, i = 0
            let giveUp = Date().addingTimeInterval(240)  // bounded even if the test fails before it stops it
            while !(await progress.stopped) && Date() < giveUp {
                i += 1
                do {
                    await progress.record(try await erin.sendMessage(room, body: "m\(i)", clientMessageId: "erin-\(i)").seq)
                    lastOK = i
                } catch let error as ChatroomError {
                    codes.append(error.code)
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return (codes, i - lastOK)
        }
        try await progress.waitFor(count: 40, "sends before the pause")
        cluster.pause(leader)
        let atPause = await progress.count
        try await Task.sleep(for: .seconds(10))  // the fault's length: past the heartbeat timeout and an election
        // Sends fail over: the leader stays paused until one more was acknowledged without it.
        try await progress.waitFor(count: atPause + 1, "a send acknowledged while the old leader is paused", seconds: 60)
        cluster.resume(leader)
        let atResume = await progress.count
        try await progress.waitFor(count: atResume + 40, "sends after the pause")
        await progress.stop()
        let outcome = try await sender.value
        let result = (acked: await progress.acked, codes: outcome.codes, lastOK: outcome.lastOK)
        #expect(!result.codes.contains(ChatroomError.notEntered), "codes: \(result.codes)")
        #expect(result.lastOK <= 1, "the last sends succeeded")
        try await Self.waitFor("the listener to see every acknowledged message", seconds: 20) {
            Set(await rf.messages(in: room).map(\.seq)).isSuperset(of: result.acked)
        }
        let heard = await rf.messages(in: room).map(\.seq)
        #expect(heard == heard.sorted() && Set(heard).count == heard.count)
        for (name, recorder) in [("erin", re), ("fay", rf)] {
            let events = await recorder.events
            let lost = events.contains { if case .status(_, .lost) = $0 { true } else { false } }
            let exits = events.compactMap { event -> String? in
                guard case .notification(_, let n) = event, n.type == .exit else { return nil }
                return n.source.userId
            }
            #expect(!lost, "\(name) was told its session was lost")
            #expect(exits.isEmpty, "\(name) saw exits of \(exits)")
            let states = await recorder.states(of: room)
            #expect(states == [.entering, .enterOK], "\(name) reconnected: \(states)")
        }
        await erin.close(); await fay.close()
        }
    }

    /// Found by cluster/chaos: a node stopped (SIGTERM) while its edge had live feeds and sessions scheduled
    /// the edge's work on Raft's event loop after that loop shut down, and a debug build crashed at exit
    /// ("leaking promise"). Every node now stops with status 0 and no fatal line in its log. (The race needs a
    /// feed's retry to land in the moment between the loop's shutdown and the process's exit: this test
    /// makes that moment likely, not certain; the chaos runs stop every node of every schedule this way.)
    @Test func aNodeStoppedWithLiveSessionsExitsCleanly() async throws {
        try await withLocalCluster { cluster in
        let room = "e2e-stop"
        try await Self.prepare(cluster, users: ["una", "vic"], room: room)
        let una = Self.client(cluster, via: [1]), vic = Self.client(cluster, via: [1])
        try await Self.enter(una, "una", room)
        try await Self.enter(vic, "vic", room)
        _ = try await Self.sendAcked(una, room, body: "before the stop", id: "una-1")
        // The others go first: node 1 then stops with sessions it cannot end (no quorum left), so its
        // edge's feeds are still polling while its loops shut down — the case that crashed.
        for id in cluster.ids.reversed() {
            let status = cluster.stop(id)
            let log = (try? String(contentsOf: cluster.directory.appendingPathComponent("node-\(id).log"), encoding: .utf8)) ?? ""
            #expect(status == 0, "node \(id) did not exit cleanly: \(log.suffix(1500))")
        }
        for id in cluster.ids {
            let log = (try? String(contentsOf: cluster.directory.appendingPathComponent("node-\(id).log"), encoding: .utf8)) ?? ""
            #expect(!log.contains("Fatal error") && !log.contains("leaking promise"), "node \(id): \(log.suffix(600))")
        }
        await una.close(); await vic.close()
        }
    }
}
