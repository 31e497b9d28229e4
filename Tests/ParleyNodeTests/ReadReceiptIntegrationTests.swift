import Foundation
import ParleyClient
import Testing

/// Issue 38 item 2 (seed 001's team message receipts, NIM's P2P read receipt) and the one-to-one unread
/// counts of item 4, through the Swift SDK and the server API on a real 3-node cluster, every user on another
/// edge: a reader with two devices is counted once; the senders' devices hear the receipts live; the unread
/// counts are right after a reconnect on another node; bad input changes nothing.
@Suite(.serialized, .timeLimit(.minutes(4))) struct ReadReceiptIntegrationTests {
    typealias Inbox = ImClientEndToEndTests.Inbox
    static let api = ImClientEndToEndTests.api
    let helpers = ImClientEndToEndTests()

    @Test("001 team receipts: read and unread counts and who read each message, one reader across two devices, the sender told live; the server API agrees")
    func teamReceiptsAcrossDevicesAndNodes() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.api.secret)"]) { cluster in
        try await helpers.start(cluster, ["alice", "bob", "carol"])
        let (alice, aliceBox) = try await helpers.client(cluster, 1, "alice")
        let (bob, _) = try await helpers.client(cluster, 2, "bob")
        let (bobPhone, _) = try await helpers.client(cluster, 3, "bob")
        let (carol, _) = try await helpers.client(cluster, 3, "carol")
        try await alice.createTeam("crew", name: "Crew", options: TeamOptions(beInviteMode: "noAuth"))
        try await alice.addUsers(["bob", "carol"], toTeam: "crew")
        // The read events are live hints to the devices that follow the team's feed (`teamReceipts` is the
        // record): a device whose edge starts following a moment after it joined may miss the first ones, as
        // under a loaded machine. Wait until alice's edge follows: a probe read by bob reaches her.
        var live = false
        for attempt in 0..<20 where !live {
            let probe = try await alice.sendMessage(to: .team("crew"), body: "probe \(attempt)")
            try await bob.markRead(team: "crew", throughSeq: probe)
            let deadline = ContinuousClock.now + .seconds(1)
            while !live, ContinuousClock.now < deadline {
                live = aliceBox.events.contains(.teamRead(teamId: "crew", reader: "bob", throughSeq: probe))
                if !live { try await Task.sleep(for: .milliseconds(20)) }
            }
        }
        #expect(live, "alice's devices never heard a receipt")
        var seqs: [Int64] = []
        for body in ["one", "two", "three"] { seqs.append(try await alice.sendMessage(to: .team("crew"), body: body)) }

        try await bob.markRead(team: "crew", throughSeq: seqs[1])
        try await bobPhone.markRead(team: "crew", throughSeq: seqs[2])
        try await bobPhone.markRead(team: "crew", throughSeq: seqs[0])  // late, from the other device: changes nothing
        try await carol.markRead(team: "crew", throughSeq: seqs[0])
        try await cluster.eventually("alice's devices hear both readers", seconds: 10) {
            aliceBox.events.contains(.teamRead(teamId: "crew", reader: "bob", throughSeq: seqs[2]))
                && aliceBox.events.contains(.teamRead(teamId: "crew", reader: "carol", throughSeq: seqs[0]))
        }
        let receipts = try await alice.teamReceipts("crew", seqs: seqs)
        #expect(receipts.map(\.readers) == [["bob", "carol"], ["bob"], ["bob"]])
        #expect(receipts.map(\.unread) == [[], ["carol"], ["carol"]])
        #expect(receipts.map(\.readCount) == [2, 1, 1] && receipts.map(\.unreadCount) == [0, 1, 1])
        #expect(receipts.allSatisfy { $0.from == "alice" })
        // The app server reads the same through another node.
        let viaAPI = try await Self.api.post(cluster.http(2), "/v1/team/receipts", ["tid": "crew", "seqs": seqs])
        #expect(viaAPI.status == 200, "\(viaAPI.json)")
        let listed = viaAPI.data["receipts"] as? [[String: Any]] ?? []
        #expect(listed.map { $0["readCount"] as? Int } == [2, 1, 1] && listed.map { $0["unread"] as? [String] } == [[], ["carol"], ["carol"]])

        // Bad input changes nothing: too many sequences, a stranger's read (EdgeImTests has the malformed ones).
        do {
            _ = try await alice.teamReceipts("crew", seqs: Array(1...101))
            Issue.record("101 sequences were accepted")
        } catch let error as ChatroomError { #expect(error.code == 414) }
        try await cluster.eventually("nothing moved", seconds: 5) {
            (try? await alice.teamReceipts("crew", seqs: seqs).map(\.readers)) == [["bob", "carol"], ["bob"], ["bob"]]
        }
        #expect(try await Self.api.post(cluster.http(1), "/v1/user/create", ["accid": "dan", "token": "dan-token"]).status == 200)
        let (dan, _) = try await helpers.client(cluster, 1, "dan")
        do {
            _ = try await dan.teamReceipts("crew", seqs: seqs)
            Issue.record("a stranger read the receipts")
        } catch let error as ChatroomError { #expect(error.code == 14214) }
        // Item 4 for teams: carol's unread count (alice's messages after her position) from another node, and
        // after she reads on.
        let (carolAgain, _) = try await helpers.client(cluster, 1, "carol")
        var crew = try await carolAgain.conversations().teams.first { $0.teamId == "crew" }
        #expect(crew?.unread == 2 && crew?.readThrough == seqs[0] && crew?.last?.body == "three", "\(String(describing: crew))")
        try await carolAgain.markRead(team: "crew", throughSeq: seqs[2])
        crew = try await carolAgain.conversations().teams.first { $0.teamId == "crew" }
        #expect(crew?.unread == 0)
        let viaAPITeams = try await Self.api.post(cluster.http(2), "/v1/msg/conversations", ["accid": "bob"])
        let bobTeams = viaAPITeams.data["teams"] as? [[String: Any]] ?? []
        #expect(bobTeams.first?["tid"] as? String == "crew" && bobTeams.first?["unread"] as? Int == 0, "\(viaAPITeams.json)")
        for c in [alice, bob, bobPhone, carol, carolAgain, dan] { await c.logout() }
        }
    }

    @Test("P2P receipts and unread counts: the receiver marks read on one node, the sender hears it on another; the counts are right after a reconnect elsewhere and through the server API")
    func oneToOneReceiptsAndUnreadCounts() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.api.secret)"]) { cluster in
        try await helpers.start(cluster, ["alice", "carol"])
        let (alice, aliceBox) = try await helpers.client(cluster, 1, "alice")
        let (carol, carolBox) = try await helpers.client(cluster, 3, "carol")
        var receiverSeqs: [Int64] = []
        for i in 0..<3 { receiverSeqs.append(try await carol.sendMessage(to: .p2p("alice"), body: "m\(i)", clientMessageId: "m\(i)")) }
        _ = try await alice.sendMessage(to: .p2p("carol"), body: "reply", clientMessageId: "r0")
        try await cluster.eventually("alice has carol's three and the copy of her reply", seconds: 10) {
            aliceBox.items.filter { $0.kind == "message" && $0.from == "carol" }.count == 3
                && aliceBox.items.contains { $0.kind == "message" && $0.from == "alice" }
        }
        var conversations = try await alice.conversations().oneToOne
        #expect(conversations.map(\.peer) == ["carol"] && conversations.first?.unread == 3)
        #expect(conversations.first?.last.body == "reply", "the newest message of the conversation, sent or received")

        try await alice.markRead(peer: "carol", throughSeq: receiverSeqs[1])
        try await cluster.eventually("carol hears alice read two", seconds: 10) {
            carolBox.events.contains(.p2pRead(peer: "alice", reader: "alice", throughSeq: receiverSeqs[1]))
        }
        try await cluster.eventually("the reply in carol's log", seconds: 10) {
            carolBox.items.contains { $0.kind == "message" && $0.from == "alice" }
        }
        let carolSide = try await carol.conversations().oneToOne
        #expect(carolSide.first?.peer == "alice" && carolSide.first?.peerReadThrough == receiverSeqs[1])
        #expect(carolSide.first?.unread == 1, "alice's reply is unread at carol's")

        // alice comes back on another node: the count is where she left it.
        await alice.logout()
        let (aliceAgain, aliceAgainBox) = try await helpers.client(cluster, 2, "alice")
        // The SDK read the list at login by itself (NIM's recent sessions).
        try await cluster.eventually("the conversation list at login", seconds: 10) {
            aliceAgainBox.events.contains { if case .conversations(let l) = $0 { l.oneToOne.first?.unread == 1 } else { false } }
        }
        conversations = try await aliceAgain.conversations().oneToOne
        #expect(conversations.first?.unread == 1 && conversations.first?.readThrough == receiverSeqs[1])
        let viaAPI = try await Self.api.post(cluster.http(3), "/v1/msg/conversations", ["accid": "alice"])
        #expect(viaAPI.status == 200, "\(viaAPI.json)")
        let listed = viaAPI.data["conversations"] as? [[String: Any]] ?? []
        #expect(listed.first?["peer"] as? String == "carol" && listed.first?["unread"] as? Int == 1)
        // Reading oneself is refused.
        do {
            try await aliceAgain.markRead(peer: "alice", throughSeq: 1)
            Issue.record("a conversation with oneself was marked")
        } catch let error as ChatroomError { #expect(error.code == 14202) }
        for c in [aliceAgain, carol] { await c.logout() }
        }
    }
}
