import Foundation
import ParleyNode
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyCluster
import ParleyRooms
import Testing
import ParleyPlacement

/// Issue 19 on a real 3-node cluster through the signed server API (docs/im.md, docs/api.md "IM"): users on
/// different shards befriend each other with verification (the request and the acceptance reach the other
/// user's shard by the effects relay, with the FriendAdd notifications), a blocked user's message is refused
/// and never stored, one-to-one messages land in order on both sides once, and kill -9 of the receiver's
/// shard leader while messages flow loses and duplicates none that was acknowledged.
@Suite(.serialized, .timeLimit(.minutes(4))) struct ImIntegrationTests {
    static let app = SignedAPIClient(appKey: "dev", secret: "dev-app-secret-0123456789", signsBody: true)
    var api: SignedAPIClient { Self.app }

    func shard(of account: String) -> Int { ShardMap(shardCount: 16).shard(ofUser: AppScope.scoped(account, in: "dev")) }

    func start(_ cluster: LocalCluster, users: [String]) async throws {
        try cluster.startAll()
        try await cluster.waitForSignedAPI(api)
        for u in users {
            #expect(try await api.post(cluster.http(1), "/v1/user/create", ["accid": u, "token": "\(u)-token"]).status == 200)
        }
    }

    func sync(_ cluster: LocalCluster, _ account: String, node: UInt64, after: UInt64 = 0) async throws -> [[String: Any]] {
        let answer = try await api.post(cluster.http(node), "/v1/msg/sync", ["accid": account, "afterSeq": after, "limit": 500])
        #expect(answer.status == 200, "\(answer.json)")
        return answer.data["items"] as? [[String: Any]] ?? []
    }

    /// Every item of the account's log, page by page.
    func syncAll(_ cluster: LocalCluster, _ account: String, node: UInt64) async throws -> [[String: Any]] {
        var all: [[String: Any]] = []
        while true {
            let page = try await sync(cluster, account, node: node, after: UInt64(all.last?["seq"] as? Int ?? 0))
            if page.isEmpty { return all }
            all += page
        }
    }

    func relations(_ cluster: LocalCluster, _ account: String, node: UInt64) async throws -> [String: Any] {
        let answer = try await api.post(cluster.http(node), "/v1/friend/get", ["accid": account])
        #expect(answer.status == 200, "\(answer.json)")
        return answer.data
    }

    @Test("004: friends with verification across shards and nodes, FriendAdd notices, blocklist 14201, DND, P2P in order")
    func friendsBlocklistAndMessagesAcrossShards() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.app.secret)"]) { cluster in
        // bob is on another shard than alice (found by name, so the test does not depend on the hash).
        let bob = (0..<50).map { "bob\($0)" }.first { shard(of: $0) != shard(of: "alice") }!
        try await start(cluster, users: ["alice", bob, "carol"])

        // Request through node 1; bob's shard hears of it by the relay, read through node 2.
        #expect(try await api.post(cluster.http(1), "/v1/friend/add", ["accid": "alice", "faccid": bob, "type": 2, "msg": "hi"]).status == 200)
        try await cluster.eventually("bob to hold alice's request", seconds: 10) {
            let incoming = (try? await relations(cluster, bob, node: 2))?["incoming"] as? [[String: Any]] ?? []
            return incoming.first?["accid"] as? String == "alice" && incoming.first?["msg"] as? String == "hi"
        }
        let notice = try await sync(cluster, bob, node: 3)
        #expect(notice.count == 1 && notice[0]["kind"] as? String == "friendAdd" && notice[0]["operation"] as? Int == 2
                && notice[0]["source"] as? String == "alice" && notice[0]["target"] as? String == bob, "\(notice)")
        // Verify without a request is refused and changes nothing; with it both become friends.
        let noRequest = try await api.post(cluster.http(3), "/v1/friend/add", ["accid": "carol", "faccid": "alice", "type": 3])
        #expect(noRequest.status == 404 && noRequest.code == 14205, "\(noRequest.json)")
        #expect(try await api.post(cluster.http(3), "/v1/friend/add", ["accid": bob, "faccid": "alice", "type": 3]).status == 200)
        try await cluster.eventually("the friendship on both sides", seconds: 10) {
            let a = (try? await relations(cluster, "alice", node: 1))?["friends"] as? [[String: Any]] ?? []
            let b = (try? await relations(cluster, bob, node: 2))?["friends"] as? [[String: Any]] ?? []
            return a.map { $0["faccid"] as? String } == [bob] && b.map { $0["faccid"] as? String } == ["alice"]
        }
        let verified = try await sync(cluster, "alice", node: 2)
        #expect(verified.last?["kind"] as? String == "friendAdd" && verified.last?["operation"] as? Int == 3, "\(verified)")
        #expect((try await relations(cluster, "alice", node: 3)["outgoing"] as? [Any])?.isEmpty == true, "the request went")

        // Blocklist: carol's messages to bob are refused (14201) and stored nowhere.
        #expect(try await api.post(cluster.http(1), "/v1/user/setSpecialRelation",
                                   ["accid": bob, "targetAcc": "carol", "relationType": 1, "value": 1]).status == 200)
        let blocked = try await api.post(cluster.http(2), "/v1/msg/sendMsg", ["from": "carol", "to": bob, "body": "let me in", "msgId": "c1"])
        #expect(blocked.status == 403 && blocked.code == 14201, "\(blocked.json)")
        // Bad input: an unknown account, a notification type, an empty body — each refused.
        #expect(try await api.post(cluster.http(1), "/v1/msg/sendMsg", ["from": "alice", "to": "nobody", "body": "x"]).code == 10404)
        #expect(try await api.post(cluster.http(1), "/v1/msg/sendMsg", ["from": "alice", "to": bob, "type": "notification", "body": "x"]).code == 10414)
        #expect(try await api.post(cluster.http(1), "/v1/msg/sendMsg", ["from": "alice", "to": bob, "body": ""]).code == 414)
        #expect(try await api.post(cluster.http(1), "/v1/friend/add", ["accid": "alice", "faccid": bob, "type": 7]).code == 10414)

        // P2P in order through every node; a resend answers the first send's seq; DND marks later ones alert false.
        var seqs: [UInt64] = []
        for i in 0..<6 {
            if i == 3 {
                #expect(try await api.post(cluster.http(2), "/v1/user/setSpecialRelation",
                                           ["accid": bob, "targetAcc": "alice", "relationType": 2, "value": 1]).status == 200)
            }
            let sent = try await api.post(cluster.http(UInt64(i % 3 + 1)), "/v1/msg/sendMsg",
                                          ["from": "alice", "to": bob, "body": "m\(i)", "msgId": "a\(i)"])
            #expect(sent.status == 200, "\(sent.json)")
            seqs.append(UInt64(sent.data["seq"] as? Int ?? 0))
        }
        let resent = try await api.post(cluster.http(3), "/v1/msg/sendMsg", ["from": "alice", "to": bob, "body": "m1", "msgId": "a1"])
        #expect(UInt64(resent.data["seq"] as? Int ?? 0) == seqs[1])
        let inbox = try await sync(cluster, bob, node: 1).filter { $0["kind"] as? String == "message" }
        #expect(inbox.map { $0["body"] as? String } == (0..<6).map { "m\($0)" }, "\(inbox)")
        #expect(inbox.map { $0["alert"] as? Bool } == [true, true, true, false, false, false])
        #expect(inbox.allSatisfy { $0["from"] as? String == "alice" })
        // The sender's copies arrive by the relay: each once, with the receiver's seq.
        try await cluster.eventually("alice's copies of all six", seconds: 10) {
            let copies = ((try? await sync(cluster, "alice", node: 3)) ?? []).filter { $0["kind"] as? String == "message" }
            return copies.map { UInt64($0["receiverSeq"] as? Int ?? 0) } == seqs
        }

        // 001 through the API: a team made with a member who joins at once, its log, and refusals by role.
        let made = try await api.post(cluster.http(2), "/v1/team/create",
                                      ["tid": "ops", "owner": "alice", "tname": "Ops", "members": [bob], "beinvitemode": 1])
        #expect(made.status == 200 && made.data["tid"] as? String == "ops", "\(made.json)")
        #expect(try await api.post(cluster.http(1), "/v1/team/create", ["tid": "ops", "owner": "carol", "tname": "Again"]).code == 14210)
        let said = try await api.post(cluster.http(3), "/v1/team/sendMsg", ["tid": "ops", "from": bob, "body": "hello team", "msgId": "t1"])
        #expect(said.status == 200, "\(said.json)")
        #expect(try await api.post(cluster.http(3), "/v1/team/sendMsg", ["tid": "ops", "from": "carol", "body": "x"]).code == 14214)
        #expect(try await api.post(cluster.http(1), "/v1/team/update", ["tid": "ops", "owner": bob, "tname": "Mine"]).code == 14208)
        #expect(try await api.post(cluster.http(1), "/v1/team/query", ["tid": "nope", "limit": 10]).code == 14209)
        let team = try await api.post(cluster.http(1), "/v1/team/query", ["tid": "ops", "limit": 10])
        #expect(team.data["owner"] as? String == "alice" && team.data["tname"] as? String == "Ops", "\(team.json)")
        let members = (team.data["members"] as? [[String: Any]] ?? []).map { "\($0["accid"] ?? "")/\($0["type"] ?? "")" }
        #expect(Set(members) == ["alice/2", "\(bob)/0"])
        let items = team.data["items"] as? [[String: Any]] ?? []
        #expect(items.map { $0["kind"] as? String } == ["notification", "message"] && items[0]["operation"] as? Int == 0
                && items[0]["targets"] as? [String] == [bob] && items[1]["body"] as? String == "hello team", "\(items)")
        try await cluster.eventually("ops in bob's teams", seconds: 10) {
            ((try? await relations(cluster, bob, node: 1))?["teams"] as? [String]) == ["ops"]
        }
        // The operator's view: the relay's backlog drains to 0 on every node; the users and the team are counted.
        try await cluster.eventually("no IM effect pending anywhere", seconds: 10) {
            let reports = await cluster.statuses()
            return reports.count == 3 && reports.values.allSatisfy { $0.shards.allSatisfy { $0.imPending == 0 } }
                && reports.values.allSatisfy { $0.shards.reduce(0) { $0 + ($1.imUsers ?? 0) } >= 1 }
        }
        let report = try await cluster.status(1)
        let leaders = report.shards.filter { $0.role == "leader" }
        #expect(leaders.reduce(0) { $0 + ($1.imTeams ?? 0) } <= 1)
        let (metricsData, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.ops(1) + "/metrics")!)
        let metrics = String(decoding: metricsData, as: UTF8.self)
        #expect(metrics.contains("parley_im_effects_pending 0"), "\(metrics.prefix(300))")
        }
    }

    @Test("19: kill -9 of the receiver's shard leader while one-to-one messages flow: none acknowledged lost or doubled")
    func killingTheReceiversShardLeaderLosesNoAcknowledgedMessage() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.app.secret)"]) { cluster in
        let bob = (0..<50).map { "bob\($0)" }.first { shard(of: $0) != shard(of: "alice") }!
        try await start(cluster, users: ["alice", bob])
        // One leader, as every node reports it (not while the balancer moves it).
        var found: UInt64?
        try await cluster.eventually("one leader of bob's shard", seconds: 20) {
            found = await cluster.leader(ofShard: shard(of: bob))
            return found != nil
        }
        let victim = try #require(found)
        let entry = cluster.ids.first { $0 != victim }!
        var acknowledged: [String: UInt64] = [:]
        var i = 0
        var ackedAtKill: Int?
        // The kill comes once 150 sends were acknowledged, and sending goes on until 100 more were acknowledged
        // after it: conditions, not counts reached in a fixed time (issue 32). A send that failed is sent again
        // with its msgId, as an SDK does, until it is acknowledged. Bounded: 180 s or 1,000 sends.
        let giveUp = Date().addingTimeInterval(180)
        while Date() < giveUp && i < 1_000 && acknowledged.count < (ackedAtKill ?? 150) + 100 {
            if ackedAtKill == nil && acknowledged.count >= 150 {
                cluster.kill9(victim)
                ackedAtKill = acknowledged.count
            }
            let id = "k\(i)"
            var answer: SignedAPIClient.Answer?
            for _ in 0..<20 {
                answer = try? await api.post(cluster.http(entry), "/v1/msg/sendMsg", ["from": "alice", "to": bob, "body": id, "msgId": id])
                if answer?.status == 200 { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            if let a = answer, a.status == 200 { acknowledged[id] = UInt64(a.data["seq"] as? Int ?? 0) }
            i += 1
        }
        let afterKill = acknowledged.count - (ackedAtKill ?? acknowledged.count)
        #expect(ackedAtKill != nil && afterKill >= 100, "killed after \(ackedAtKill.map(String.init) ?? "never"), \(afterKill) acknowledged after")
        // A sender whose answer was lost sends again with the same msgId: messages acknowledged before the kill,
        // resent to the new leader, are answered with their first seq and stored nothing new (the resend marks
        // are replicated state, not the old leader's memory).
        for i in 0..<20 {
            let id = "k\(i * 5)"
            guard let seq = acknowledged[id] else { continue }
            let again = try await api.post(cluster.http(entry), "/v1/msg/sendMsg", ["from": "alice", "to": bob, "body": id, "msgId": id])
            #expect(again.status == 200 && UInt64(again.data["seq"] as? Int ?? 0) == seq, "\(id) resent: \(again.json)")
        }
        let inbox = try await syncAll(cluster, bob, node: entry).filter { $0["kind"] as? String == "message" }
        let bodies = inbox.compactMap { $0["body"] as? String }
        #expect(Set(bodies).count == bodies.count, "no message stored twice")
        for (id, seq) in acknowledged {
            #expect(inbox.contains { $0["body"] as? String == id && UInt64($0["seq"] as? Int ?? 0) == seq }, "\(id) lost")
        }
        // The sender's copies: every acknowledged message once, after the relay caught up.
        try await cluster.eventually("alice's copies", seconds: 15) {
            let copies = ((try? await syncAll(cluster, "alice", node: entry)) ?? []).compactMap { $0["body"] as? String }
            return Set(copies).count == copies.count && Set(acknowledged.keys).isSubset(of: Set(copies))
        }
        }
    }
}
