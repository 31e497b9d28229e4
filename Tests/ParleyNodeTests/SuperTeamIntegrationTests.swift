import Foundation
import ParleyClient
import Testing

/// Issue 38 item 3, seed 001's supergroup on a real 3-node cluster, members on every edge. A supergroup's
/// events do not name its members; each edge delivers them to the devices the team's shard confirmed are
/// members, from the sequence it confirmed it — so a kicked or departed member stops hearing the team at
/// once, a non-member on the same edge never does, and a device that logs in or joins later hears it.
@Suite(.serialized, .timeLimit(.minutes(4))) struct SuperTeamIntegrationTests {
    typealias Inbox = ImClientEndToEndTests.Inbox
    static let api = ImClientEndToEndTests.api

    @Test("001 supergroup: members on three edges hear messages; kicked, departed and non-members do not; later devices and rejoins do; DND sets only alert")
    func deliveryFollowsMembership() async throws {
        let e2e = ImClientEndToEndTests()
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.api.secret)"]) { cluster in
        try await e2e.start(cluster, ["alice", "bob", "carol", "dave", "erin"])
        let (alice, _) = try await e2e.client(cluster, 1, "alice")
        let (bob, bobBox) = try await e2e.client(cluster, 2, "bob")
        let (carol, carolBox) = try await e2e.client(cluster, 3, "carol")
        let (dave, daveBox) = try await e2e.client(cluster, 2, "dave")
        let (erin, erinBox) = try await e2e.client(cluster, 3, "erin")

        // An unknown type is refused (414) and makes nothing; "superTeam" makes a supergroup.
        await #expect(throws: ChatroomError.self) {
            try await alice.createTeam("hall", name: "Hall", options: TeamOptions(beInviteMode: "noAuth", type: "discussion"))
        }
        await #expect(throws: ChatroomError.self) { try await alice.fetchTeam("hall") }
        try await alice.createTeam("hall", name: "Hall", options: TeamOptions(beInviteMode: "noAuth", type: "superTeam"))
        #expect(try await alice.fetchTeam("hall").type == "superTeam")
        try await alice.addUsers(["bob", "carol", "dave"], toTeam: "hall")
        try await carol.updateNotifyState(.none, inTeam: "hall")
        try await cluster.eventually("every member told it joined", seconds: 15) {
            [bobBox, carolBox, daveBox].allSatisfy { $0.events.contains(.teamMembership(teamId: "hall", isMember: true)) }
        }
        func said(_ box: Inbox, _ body: String) -> (TeamItem, Bool)? { box.teamItems("hall").first { $0.0.body == body } }
        func saidAny(_ box: Inbox, _ prefix: String) -> Bool { box.teamItems("hall").contains { $0.0.body?.hasPrefix(prefix) == true } }
        /// Sends `prefix-1`, `prefix-2`, … until `ready` (at most 15 s): the edges confirm a device's membership
        /// with the team's shard asynchronously, after the login or the join, and what a device misses meanwhile
        /// its SDK fills from the team's log (with `alert` true) once a push shows the gap.
        func sendUntil(_ prefix: String, _ ready: () -> Bool) async throws {
            for k in 1...40 where !ready() {
                try await alice.sendMessage(to: .team("hall"), body: "\(prefix)-\(k)", clientMessageId: "\(prefix)-\(k)")
                try await Task.sleep(for: .milliseconds(400))
            }
            #expect(ready(), "\(prefix): the devices never heard a push")
        }
        // A push to carol carries alert false (she set None); a fill would say true.
        try await sendUntil("m1") { carolBox.teamItems("hall").contains { $0.0.body?.hasPrefix("m1-") == true && !$0.1 } }
        try await cluster.eventually("m1 on nodes 2 and 3", seconds: 15) { saidAny(bobBox, "m1-") && saidAny(daveBox, "m1-") }
        #expect(bobBox.teamItems("hall").allSatisfy { $0.1 }, "bob is alerted by everything")

        // Kicked (dave) and departed (carol) members hear their own notification, then nothing more.
        try await alice.kickUsers(["dave"], fromTeam: "hall")
        try await carol.quitTeam("hall")
        try await cluster.eventually("the kick and the leave heard by those they name", seconds: 15) {
            daveBox.notifications("hall").contains { $0.operation == 1 } && carolBox.notifications("hall").contains { $0.operation == 2 }
        }
        try await alice.sendMessage(to: .team("hall"), body: "m2", clientMessageId: "m2")
        try await cluster.eventually("m2 at bob", seconds: 15) { said(bobBox, "m2") != nil }

        // A device that logs in later (another edge) and a member added again hear the next message by push:
        // it is the last one, so nothing fills it in from the log afterwards.
        let (bobPhone, bobPhoneBox) = try await e2e.client(cluster, 1, "bob")
        try await alice.addUsers(["dave"], toTeam: "hall")
        try await cluster.eventually("dave a member again", seconds: 15) {
            daveBox.events.filter { $0 == .teamMembership(teamId: "hall", isMember: true) }.count == 2
        }
        // The phone has no gap to fill until a push reaches it, nor has dave after his rejoin: a first "m3-"
        // item at either means pushes reach it; "m3" is then pushed, the last message of the test.
        try await sendUntil("m3") { saidAny(bobPhoneBox, "m3-") && saidAny(daveBox, "m3-") }
        try await alice.sendMessage(to: .team("hall"), body: "m3", clientMessageId: "m3")
        try await cluster.eventually("m3 at bob's phone and at dave", seconds: 15) {
            said(bobPhoneBox, "m3") != nil && said(daveBox, "m3") != nil && said(bobBox, "m3") != nil
        }
        try await Task.sleep(for: .seconds(1))
        #expect(said(carolBox, "m2") == nil && said(carolBox, "m3") == nil && !saidAny(carolBox, "m3-"), "carol left: nothing after her leave")
        #expect(erinBox.teamItems("hall").isEmpty, "erin, never a member, on carol's edge: nothing")
        #expect(bobBox.teamItems("hall").map(\.0.seq) == Array(1...Int64(bobBox.teamItems("hall").count)), "bob: every item once, in order")
        for c in [alice, bob, carol, dave, erin, bobPhone] { await c.logout() }
        }
    }

    @Test("001 supergroup through the server API: create with type, query shows it, an unknown type is refused")
    func serverAPI() async throws {
        let e2e = ImClientEndToEndTests()
        try await withLocalCluster(size: 1, extraArguments: ["--app", "dev:\(Self.api.secret)"]) { cluster in
        try await e2e.start(cluster, ["alice", "bob"])
        let base = cluster.http(1)
        let bad = try await Self.api.post(base, "/v1/team/create", ["tid": "hall", "owner": "alice", "tname": "Hall", "type": "discussion"])
        #expect(bad.code == 10414, "\(bad.json)")
        #expect(try await Self.api.post(base, "/v1/team/query", ["tid": "hall", "limit": 10]).code == 14209, "nothing was made")
        let made = try await Self.api.post(base, "/v1/team/create",
                                           ["tid": "hall", "owner": "alice", "tname": "Hall", "type": "superTeam", "beinvitemode": 1,
                                            "members": ["bob"]])
        #expect(made.status == 200, "\(made.json)")
        let query = try await Self.api.post(base, "/v1/team/query", ["tid": "hall", "limit": 10])
        #expect(query.status == 200, "\(query.json)")
        let team = query.data
        #expect(team["type"] as? String == "superTeam", "\(query.json)")
        #expect((team["members"] as? [[String: Any]])?.count == 2, "\(query.json)")
        }
    }
}
