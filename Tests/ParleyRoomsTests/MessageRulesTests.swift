import Testing
@testable import ParleyRooms

@Suite struct MessageRulesTests {
    @Test("N1 messages go to the room; blocklisted, muted, temp muted, room-muted and anonymous senders are refused")
    func n1SendChecks() throws {
        var shard = TestShard.populated()
        let sent = shard.user("dave", .sendMessage(SendMessage(roomId: "r1", type: .text, clientMessageId: "c1",
                                                               body: "hello", ext: "x")))
        let event = try #require(sent.events.first)
        #expect(sent.events.count == 1 && event.audience == .room && event.roomId == "r1")
        guard case .message(let m) = event.kind else { Issue.record("not a message"); return }
        #expect(m.body == "hello" && m.senderId == "dave" && m.clientMessageId == "c1" && m.seq == event.seq)
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "x")), as: TestShard.session("ghost"),
                             .notEntered)
        shard.user("boss", .setMuted(MemberUpdate(roomId: "r1", userId: "dave")))
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "x")), as: TestShard.session("dave"), .muted)
        shard.user("boss", .setTempMute(MemberUpdate(roomId: "r1", userId: "erin", duration: 10)))
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "x")), as: TestShard.session("erin"),
                             .tempMuted)
        shard.enter("anon", mode: .anonymous)
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "x")),
                             as: TestShard.session("anon", mode: .anonymous), .anonymousCannotSend)
        shard.user("boss", .setRoomMute(RoomSwitch(roomId: "r1", enable: true)))
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "x")), as: TestShard.session("carol"),
                             .roomMuted)
        shard.user("boss", .setBlocked(MemberUpdate(roomId: "r1", userId: "carol")))
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "x")), as: TestShard.session("carol"),
                             .notEntered)
    }

    @Test("N1 a resend with the same clientMessageId from the same sender is answered again, not sent twice")
    func n1ResendIsDeduplicated() throws {
        var shard = TestShard.populated()
        let first = shard.user("dave", .sendMessage(SendMessage(roomId: "r1", clientMessageId: "c1", body: "hello")))
        let again = shard.user("dave", .sendMessage(SendMessage(roomId: "r1", clientMessageId: "c1", body: "hello")))
        #expect(first.reply == again.reply && first.events.count == 1 && again.events.isEmpty)
        // The answer again names the first send's message (its serverId), which the resend did not create.
        guard case .messageSent(_, _, let serverId)? = again.reply, case .message(let m)? = first.events.first?.kind else {
            Issue.record("not a message: \(again)")
            return
        }
        #expect(serverId == m.serverId && serverId > 0)
        // Another sender, an empty id, or the app server sending as another user: distinct messages.
        let other = shard.user("erin", .sendMessage(SendMessage(roomId: "r1", clientMessageId: "c1", body: "hi")))
        #expect(other.events.count == 1 && other.reply != first.reply)
        #expect(shard.user("dave", .sendMessage(SendMessage(roomId: "r1", body: "a"))).events.count == 1)
        #expect(shard.user("dave", .sendMessage(SendMessage(roomId: "r1", body: "a"))).events.count == 1)
        let server = shard.run(.sendMessage(SendMessage(roomId: "r1", clientMessageId: "s1", body: "x", fromUser: "sys")))
        #expect(shard.run(.sendMessage(SendMessage(roomId: "r1", clientMessageId: "s1", body: "x", fromUser: "sys"))).reply
            == server.reply)
        // While the original is in history the id stays taken (ResendRulesTests covers it leaving history).
    }

    @Test("N2 clients can never send notification messages; only the server creates them")
    func n2NoClientNotifications() {
        var shard = TestShard.populated()
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", type: .notification, body: "fake")),
                             as: TestShard.session("owner"), .noPermission)
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", type: .notification, body: "fake",
                                                      fromUser: "owner")), .noPermission)
    }

    @Test("N3 notifications 301-320 carry eventType, source, targets, notifyExt and ext as the seed lists them")
    func n3NotificationFields() throws {
        #expect(NotificationType.allCases.map(\.rawValue) == Array(301 ... 320))
        var shard = TestShard.populated()
        let out = shard.user("boss", .setMuted(MemberUpdate(roomId: "r1", userId: "dave", notifyExt: "why")))
        let n = try #require(out.notifications.first)
        #expect(n.type == .addMute && n.source == NotificationMember(userId: "boss", nickname: "nick-boss"))
        #expect(n.targets == [NotificationMember(userId: "dave", nickname: "nick-dave")])
        #expect(n.notifyExt == "why" && n.ext == NotificationExt.none)
        let offer = shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "k", value: "v")))
        #expect(offer.notifications.first?.ext == .queueChange(.offer, key: "k", value: "v"))
        let manager = shard.user("owner", .markManager(MemberUpdate(roomId: "r1", userId: "carol")))
        #expect(manager.notificationTypes == [.addManager])
        let seqs = (out.events + offer.events + manager.events).map(\.seq)
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "room seq increases")
    }

    @Test("N4 enter / exit notifications can be switched off per app and per room, and left out of history")
    func n4EnterExitSwitch() {
        var noStore = AppPolicy()
        noStore.storeEnterExitInHistory = false
        var shard = TestShard(policy: noStore)
        shard.createRoom()
        let enter = shard.enter("amy")
        #expect(enter.notificationTypes == [.enter])
        #expect(shard.state.rooms["r1"]!.history.isEmpty, "301 not stored")
        var off = AppPolicy()
        off.enterExitNotifications = false
        shard.run(.setAppPolicy(off))
        #expect(shard.enter("bob").notificationTypes.isEmpty)
        shard.run(.setRoomPolicy(RoomPolicyUpdate(roomId: "r1", enterExitNotifications: true)))
        #expect(shard.enter("cid").notificationTypes == [.enter], "the room's switch overrides the app's")
        var stored = TestShard()
        stored.createRoom()
        stored.enter("amy")
        #expect(stored.state.rooms["r1"]!.history.count == 1)
    }

    @Test("N5 history kept for the retention period; query by startTime, limit ≤ 100, order and message types")
    func n5History() throws {
        var limits = RoomLimits()
        limits.historyRetentionMillis = 100_000
        limits.maxHistoryPerRoom = 50
        var shard = TestShard(limits: limits)
        shard.createRoom()
        shard.enter("amy")
        let t0 = shard.time
        for i in 0 ..< 10 {
            shard.user("amy", .sendMessage(SendMessage(roomId: "r1", type: i % 2 == 0 ? .text : .custom, body: "\(i)")))
        }
        func history(_ q: HistoryQuery) -> [HistoryItem] {
            if case .history(let items) = shard.user("amy", .fetchHistory(q)).reply { return items }
            return []
        }
        let bodies: ([HistoryItem]) -> [String] = { $0.compactMap { if case .message(let m) = $0 { m.body } else { nil } } }
        #expect(bodies(history(HistoryQuery(roomId: "r1", limit: 3))) == ["9", "8", "7"])
        #expect(bodies(history(HistoryQuery(roomId: "r1", limit: 3, ascending: true, types: [.text]))) == ["0", "2", "4"])
        #expect(bodies(history(HistoryQuery(roomId: "r1", startTime: t0 + 3, limit: 100, ascending: true)))
            == ["3", "4", "5", "6", "7", "8", "9"])
        #expect(history(HistoryQuery(roomId: "r1", limit: 100, types: [.notification])).count == 1)
        shard.expectRejected(.fetchHistory(HistoryQuery(roomId: "r1", limit: 101)), as: TestShard.session("amy"),
                             .badParameter)
        // Retention: older entries are not returned and are pruned at the next append.
        shard.time += 200_000
        #expect(history(HistoryQuery(roomId: "r1", limit: 100)).isEmpty)
        shard.user("amy", .sendMessage(SendMessage(roomId: "r1", body: "new")))
        #expect(shard.state.rooms["r1"]!.history.count == 1)
        for i in 0 ..< 60 { shard.user("amy", .sendMessage(SendMessage(roomId: "r1", body: "\(i)"))) }
        #expect(shard.state.rooms["r1"]!.history.count == 50, "per-room cap")
    }
}
