import Foundation
import ParleyClient
import Testing

/// Issue 19 end to end through the Swift SDK (`IMClient`) on a real 3-node cluster, each user on another
/// edge: friends with verification (both users' devices get the events and the FriendAdd notification), a
/// blocked user's message refused and never delivered, an offline user logging in on two devices that both
/// sync every missed message in order, every team notification type received by the other members with
/// source, targets, notifyExt and attachment, and team DND changing only the alert flag.
@Suite(.serialized, .timeLimit(.minutes(4))) struct ImClientEndToEndTests {
    static let api = SignedAPIClient(appKey: "dev", secret: "dev-app-secret-0123456789", signsBody: true)

    /// Everything one client reported, in order.
    final class Inbox: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [IMEvent] = []

        init(_ client: IMClient) {
            Task { for await e in client.events { self.append(e) } }
        }

        private func append(_ e: IMEvent) { lock.withLock { seen.append(e) } }

        var events: [IMEvent] { lock.withLock { seen } }
        var items: [IMItem] { events.compactMap { if case .item(let i) = $0 { return i } else { return nil } } }

        func teamItems(_ team: String) -> [(TeamItem, Bool)] {
            events.compactMap { if case .teamItem(team, let i, let alert) = $0 { return (i, alert) } else { return nil } }
        }

        func notifications(_ team: String) -> [TeamItem] { teamItems(team).map(\.0).filter { $0.kind == "notification" } }
    }

    func client(_ cluster: LocalCluster, _ node: UInt64, _ account: String) async throws -> (IMClient, Inbox) {
        let c = IMClient(configuration: .addresses([cluster.clientAddress(node)]))
        let inbox = Inbox(c)
        try await c.login(appKey: "dev", account: account, token: "\(account)-token")
        return (c, inbox)
    }

    func start(_ cluster: LocalCluster, _ users: [String]) async throws {
        try cluster.startAll()
        try await cluster.waitForSignedAPI(Self.api)
        for u in users {
            #expect(try await Self.api.post(cluster.http(1), "/v1/user/create", ["accid": u, "token": "\(u)-token"]).status == 200)
        }
    }

    @Test("004 and 19 through the SDK: verification with events on both sides, blocklist, two devices sync in order")
    func friendsBlocklistAndOfflineSync() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.api.secret)"]) { cluster in
        try await start(cluster, ["alice", "bob", "carol"])
        let (alice, aliceBox) = try await client(cluster, 1, "alice")
        let (bob, bobBox) = try await client(cluster, 2, "bob")
        let (carol, _) = try await client(cluster, 3, "carol")

        try await alice.requestFriend("bob", operation: .request, message: "hi")
        try await cluster.eventually("bob's FriendAdd request", seconds: 10) {
            bobBox.items.contains { $0.kind == "friendAdd" && $0.operation == 2 && $0.source == "alice" && $0.msg == "hi" }
        }
        try await bob.requestFriend("alice", operation: .verify)
        try await cluster.eventually("both friends, with events", seconds: 10) {
            aliceBox.events.contains(.friendChanged(friend: "bob", isFriend: true))
                && bobBox.events.contains(.friendChanged(friend: "alice", isFriend: true))
                && aliceBox.items.contains { $0.kind == "friendAdd" && $0.operation == 3 && $0.source == "bob" }
        }
        #expect(try await alice.isMyFriend("bob"))
        #expect(try await bob.isMyFriend("alice"))

        // Blocklist: refused with 14201, never delivered.
        try await bob.addToBlackList("carol")
        #expect(try await bob.myBlackList() == ["carol"])
        await #expect(throws: ChatroomError(code: 14201, message: "bob blocked carol")) {
            try await carol.sendMessage(to: .p2p("bob"), body: "let me in")
        }
        // Issue 33: nor do carol's friend requests reach him. (Once every node reads the screened relay: the
        // relays ask each second until all links answered with the peer protocol that has it.)
        try await cluster.eventually("every link on peer protocol 5", seconds: 15) {
            await cluster.statuses().values.allSatisfy { $0.peers.allSatisfy { ($0.protocolVersion ?? 0) >= 5 } }
        }
        try await Task.sleep(for: .milliseconds(1_500))
        try await carol.requestFriend("bob", operation: .request, message: "spam")
        // Behind it on the same relay (carol's shard to bob's), an answer to bob's own request: it arrives, so
        // the request before it was applied — and dropped.
        try await bob.requestFriend("carol", operation: .request, message: "why?")
        try await cluster.eventually("carol to have bob's request, and reject it", seconds: 10) {
            (try? await carol.requestFriend("bob", operation: .reject)) != nil
        }
        try await cluster.eventually("carol's rejection of bob's request", seconds: 10) {
            bobBox.items.contains { $0.kind == "friendAdd" && $0.source == "carol" && $0.operation == 4 }
        }
        #expect(!bobBox.items.contains { $0.kind == "friendAdd" && $0.source == "carol" && $0.operation == 2 },
                "a blocked user's friend request reached bob: \(bobBox.items.filter { $0.source == "carol" })")

        // Bob goes offline; alice sends 6; bob logs in on two devices (two other edges): both sync all in order.
        await bob.logout()
        for i in 0..<6 { try await alice.sendMessage(to: .p2p("bob"), body: "m\(i)", clientMessageId: "a\(i)") }
        let (phone, phoneBox) = try await client(cluster, 3, "bob")
        let (pad, padBox) = try await client(cluster, 1, "bob")
        try await cluster.eventually("both devices synced", seconds: 10) {
            [phoneBox, padBox].allSatisfy { box in box.items.filter { $0.kind == "message" }.count == 6 }
        }
        for box in [phoneBox, padBox] {
            let messages = box.items.filter { $0.kind == "message" }
            #expect(messages.map(\.body) == (0..<6).map { "m\($0)" }, "\(messages)")
            #expect(box.items.map(\.seq) == Array(1...Int64(box.items.count)), "every item once, in order")
            #expect(!messages.contains { $0.from == "carol" })
        }
        // A live message reaches both devices, and the sender's copy reaches alice's log.
        try await alice.sendMessage(to: .p2p("bob"), body: "live", clientMessageId: "a-live")
        try await cluster.eventually("the live message on both devices", seconds: 10) {
            phoneBox.items.last?.body == "live" && padBox.items.last?.body == "live"
        }
        try await cluster.eventually("alice's copies", seconds: 10) {
            aliceBox.items.filter { $0.kind == "message" && $0.to == "bob" }.count == 7
        }
        for c in [alice, carol, phone, pad] { await c.logout() }
        }
    }

    @Test("001 through the SDK and the API: every team notification type reaches the other members on other edges; team DND changes only alert")
    func everyTeamNotificationReachesTheMembers() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.api.secret)"]) { cluster in
        try await start(cluster, ["alice", "bob", "carol", "dave"])
        let (alice, aliceBox) = try await client(cluster, 1, "alice")
        let (bob, bobBox) = try await client(cluster, 2, "bob")
        let (carol, carolBox) = try await client(cluster, 3, "carol")
        let (dave, daveBox) = try await client(cluster, 2, "dave")
        let api = Self.api, base = cluster.http(1)

        try await alice.createTeam("crew", name: "Crew", options: TeamOptions(beInviteMode: "noAuth"))
        try await alice.addUsers(["bob"], toTeam: "crew")                                                   // Invite (0)
        let update = try await api.post(base, "/v1/team/update", ["tid": "crew", "owner": "alice", "beinvitemode": 0, "attach": "ext-1"])
        #expect(update.status == 200, "\(update.json)")                                                      // Update (3)
        try await alice.addUsers(["carol"], toTeam: "crew")
        try await cluster.eventually("carol's invitation notice", seconds: 10) {
            carolBox.items.contains { $0.kind == "teamNotice" && $0.teamId == "crew" && $0.operation == 2 && $0.source == "alice" }
        }
        try await carol.acceptInvite("crew")                                                                // AcceptInvitation (9)
        try await dave.applyToTeam("crew", message: "me too")
        try await alice.passApply("crew", applicant: "dave")                                                 // ApplyPass (5)
        try await alice.addManagers(toTeam: "crew", users: ["bob"])                                          // AddManager (7)
        try await alice.removeManagers(fromTeam: "crew", users: ["bob"])                                     // RemoveManager (8)
        let mute = try await api.post(base, "/v1/team/muteTlist", ["tid": "crew", "owner": "alice", "accid": "dave", "mute": 1, "attach": "quiet"])
        #expect(mute.status == 200, "\(mute.json)")                                                          // Mute (10)

        // Team DND: bob silences the team; a message reaches everyone, only bob's copy without an alert.
        try await bob.updateNotifyState(.none, inTeam: "crew")
        #expect(try await bob.notifyStateForNewMsg("crew") == .none)
        try await alice.sendMessage(to: .team("crew"), body: "standup", clientMessageId: "t1")
        try await cluster.eventually("the message on bob's and carol's edges", seconds: 10) {
            bobBox.teamItems("crew").contains { $0.0.body == "standup" } && carolBox.teamItems("crew").contains { $0.0.body == "standup" }
        }
        #expect(bobBox.teamItems("crew").first { $0.0.body == "standup" }?.1 == false)
        #expect(carolBox.teamItems("crew").first { $0.0.body == "standup" }?.1 == true)
        #expect(bobBox.teamItems("crew").first { $0.0.body == "standup" }?.0.seq == carolBox.teamItems("crew").first { $0.0.body == "standup" }?.0.seq)
        // A muted member cannot send (14211).
        await #expect(throws: ChatroomError.self) { try await dave.sendMessage(to: .team("crew"), body: "x") }

        try await alice.kickUsers(["dave"], fromTeam: "crew")                                                // Kick (1)
        try await carol.quitTeam("crew")                                                                     // Leave (2)
        try await alice.transferOwner("crew", to: "bob")                                                    // TransferOwner (6)
        try await bob.dismissTeam("crew")                                                                    // Dismiss (4)

        // Bob, a member from the first invite to the end, heard every type, in order, once.
        do {
            try await cluster.eventually("bob's notifications", seconds: 15) {
                bobBox.notifications("crew").map(\.operation) == [0, 3, 9, 5, 7, 8, 10, 1, 2, 6, 4]
            }
        } catch {
            Issue.record("""
                bob heard \(bobBox.notifications("crew").map { "\($0.operation ?? -1) seq \($0.seq)" }); \
                his team items' seqs \(bobBox.teamItems("crew").map(\.0.seq)); his last events: \(bobBox.events.suffix(12))
                """)
            throw error
        }
        let bobs = bobBox.notifications("crew")
        #expect(bobs[0].source == "alice" && bobs[0].targets == ["bob"])
        #expect(bobs[1].notifyExt == "ext-1" && bobs[1].attachment == ["21": "0"], "Update: the changed field and the app server's notifyExt")
        #expect(bobs[2].source == "carol")
        #expect(bobs[3].targets == ["dave"])
        #expect(bobs[6].targets == ["dave"] && bobs[6].notifyExt == "quiet" && bobs[6].attachment == ["101": "1"])
        #expect(bobs[7].targets == ["dave"])
        #expect(bobs[9].targets == ["bob"])
        #expect(bobBox.teamItems("crew").map(\.0.seq) == Array(1...Int64(bobBox.teamItems("crew").count)))
        // Carol (another edge) from her join to her leave; dave heard his own kick; alice the dismiss.
        do {
            try await cluster.eventually("carol's and dave's notifications", seconds: 15) {
                carolBox.notifications("crew").map(\.operation) == [9, 5, 7, 8, 10, 1, 2]
                    && daveBox.notifications("crew").map(\.operation).last == 1
                    && aliceBox.notifications("crew").map(\.operation).last == 4
            }
        } catch {
            Issue.record("""
                carol heard \(carolBox.notifications("crew").map { "\($0.operation ?? -1) seq \($0.seq)" }), \
                dave \(daveBox.notifications("crew").compactMap(\.operation)), alice \(aliceBox.notifications("crew").compactMap(\.operation)); \
                carol's events: \(carolBox.events.suffix(12))
                """)
            throw error
        }
        try await cluster.eventually("alice out of the dismissed team", seconds: 10) {
            aliceBox.events.contains(.teamMembership(teamId: "crew", isMember: false))
        }
        for c in [alice, bob, carol, dave] { await c.logout() }
        }
    }

    @Test("A1 for IM: a member flooding a team or a user is refused 416 with retryAfterMs, nothing refused is stored; the app server is not charged")
    func floodsAreBudgeted() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.api.secret)"]) { cluster in
        try await start(cluster, ["alice", "bob", "carol"])
        let (alice, _) = try await client(cluster, 2, "alice")
        try await alice.createTeam("crew", name: "Crew", options: TeamOptions(beInviteMode: "noAuth"))
        try await alice.addUsers(["bob"], toTeam: "crew")
        // The invitation took one of alice's tokens in the team (issue 33); at 10 a second it is back within
        // 100 ms. The flood starts with her bucket full, which the bounds below assume.
        try await Task.sleep(for: .milliseconds(250))
        for session in [IMSession.team("crew"), .p2p("bob")] {
            // 60 at once (well inside the connection's own budget of bursts of 200).
            let began = ContinuousClock.now
            let outcomes = await withTaskGroup(of: (String, ChatroomError?).self) { group in
                for i in 0..<60 {
                    let id = "flood-\(i)"
                    group.addTask {
                        do {
                            try await alice.sendMessage(to: session, body: id, clientMessageId: id)
                            return (id, nil)
                        } catch {
                            return (id, error as? ChatroomError ?? ChatroomError(code: 0, message: "\(error)"))
                        }
                    }
                }
                return await group.reduce(into: [(String, ChatroomError?)]()) { $0.append($1) }
            }
            let accepted = Set(outcomes.filter { $0.1 == nil }.map(\.0))
            for (_, error) in outcomes {
                if let e = error { #expect(e.code == 416 && (e.retryAfterMs ?? 0) > 0, "\(e)") }
            }
            // The default budget: 10 a second per sender, bursts of 20. What may pass is the bucket's rule
            // applied to the time the flood took as this test measured it (a slow machine refills more), not a
            // fixed figure (issue 32); the burst always passes.
            let took = ContinuousClock.now - began
            let refill = Int((10 * (Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)).rounded(.up))
            #expect(accepted.count >= 20 && accepted.count <= 20 + refill, "\(session): \(accepted.count) accepted in \(took)")
            let stored: [String]
            switch session {
            case .team:
                stored = try await alice.fetchTeam("crew", limit: 500).items.compactMap { $0.kind == "message" ? $0.body : nil }
            case .p2p:
                let answer = try await Self.api.post(cluster.http(1), "/v1/msg/sync", ["accid": "bob", "limit": 500])
                stored = (answer.data["items"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String == "message" ? $0["body"] as? String : nil }
            }
            #expect(stored.count == accepted.count && Set(stored) == accepted, "\(session): exactly the accepted messages are stored, once")
        }
        // The app server's sends are never charged.
        for i in 0..<40 {
            let sent = try await Self.api.post(cluster.http(1), "/v1/team/sendMsg", ["tid": "crew", "from": "alice", "body": "server \(i)"])
            #expect(sent.status == 200, "\(sent.json)")
        }
        // Issue 33: a friend request lands in the target's log as an item too: 60 at once are held to the
        // same budget (burst + rate × elapsed), the rest refused 416; bob's log holds the accepted ones only.
        let began = ContinuousClock.now
        let requests = await withTaskGroup(of: ChatroomError?.self) { group in
            for i in 0..<60 {
                group.addTask {
                    do {
                        try await alice.requestFriend("carol", operation: .request, message: "please \(i)")
                        return nil
                    } catch {
                        return error as? ChatroomError ?? ChatroomError(code: 0, message: "\(error)")
                    }
                }
            }
            return await group.reduce(into: [ChatroomError?]()) { $0.append($1) }
        }
        let took = ContinuousClock.now - began
        let refill = Int((10 * (Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)).rounded(.up))
        let accepted = requests.filter { $0 == nil }.count
        #expect(requests.allSatisfy { $0 == nil || ($0!.code == 416 && ($0!.retryAfterMs ?? 0) > 0) }, "\(requests.compactMap { $0 })")
        #expect(accepted >= 1 && accepted <= 20 + refill, "\(accepted) friend requests accepted in \(took)")
        func carolsItems() async -> Int {
            ((try? await Self.api.post(cluster.http(2), "/v1/msg/sync", ["accid": "carol", "limit": 500]))?
                .data["items"] as? [[String: Any]])?.count ?? -1
        }
        try await cluster.eventually("carol's log to hold the accepted requests", seconds: 15) { await carolsItems() >= accepted }
        #expect(await carolsItems() == accepted, "carol's log holds only the accepted requests")
        await alice.logout()
        }
    }
}
