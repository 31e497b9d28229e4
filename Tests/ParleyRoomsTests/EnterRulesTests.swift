import Testing
@testable import ParleyRooms

@Suite struct EnterRulesTests {
    @Test("E1 enter carries nickname, avatar, entry-scoped roomExt on messages and notifications, roomNotifyExt in 301")
    func e1EnterFields() throws {
        var shard = TestShard()
        shard.createRoom()
        let out = shard.enter("amy", nickname: "Amy", roomExt: "{\"title\":\"vip\"}", notifyExt: "hello all")
        let n = try #require(out.notifications.first)
        #expect(n.type == .enter && n.notifyExt == "hello all" && n.sourceRoomExt == "{\"title\":\"vip\"}")
        #expect(n.source == NotificationMember(userId: "amy", nickname: "Amy"))
        guard case .entered(let r) = try #require(out.reply) else { Issue.record("no reply"); return }
        #expect(r.member.roomNickname == "Amy" && r.member.roomAvatar == "https://a/amy")
        let sent = shard.user("amy", .sendMessage(SendMessage(roomId: "r1", body: "hi")))
        guard case .message(let m) = try #require(sent.events.first).kind else { Issue.record("no msg"); return }
        #expect(m.senderRoomExt == "{\"title\":\"vip\"}" && m.senderNickname == "Amy")
        // Entry-scoped: a new entry with another ext replaces it.
        shard.user("amy", .exit(roomId: "r1"))
        shard.enter("amy", roomExt: "plain")
        let again = shard.user("amy", .sendMessage(SendMessage(roomId: "r1", body: "hi")))
        guard case .message(let m2) = try #require(again.events.first).kind else { Issue.record("no msg"); return }
        #expect(m2.senderRoomExt == "plain")
    }

    @Test("E2 no history is pushed on enter; it is fetched on demand")
    func e2NoHistoryOnEnter() {
        var shard = TestShard()
        shard.createRoom()
        shard.enter("amy")
        shard.user("amy", .sendMessage(SendMessage(roomId: "r1", body: "one")))
        let enter = shard.enter("bob")
        #expect(!enter.events.contains { if case .message = $0.kind { true } else { false } })
        let history = shard.user("bob", .fetchHistory(HistoryQuery(roomId: "r1", limit: 10, types: [.text])))
        guard case .history(let items) = history.reply else { Issue.record("no history"); return }
        #expect(items.count == 1)
    }

    @Test("E3 a user is in at most 10 rooms; the 11th enter fails; RC one-room policy kicks from the previous room")
    func e3RoomLimit() {
        var shard = TestShard()
        for i in 0 ... 10 { shard.createRoom("room\(i)") }
        for i in 0 ..< 10 { #expect(shard.enter("amy", "room\(i)").isSuccess) }
        shard.expectRejected(.enter(EnterRoom(roomId: "room10", nickname: "a")), as: TestShard.session("amy"),
                             .tooManyRooms)
        // Another device in a room already counted is no new room.
        #expect(shard.enter("amy", "room3", device: 2).isSuccess)
        var policy = AppPolicy()
        policy.oneRoomPerUser = true
        var rc = TestShard(policy: policy)
        rc.createRoom("a")
        rc.createRoom("b")
        rc.enter("amy", "a")
        rc.enter("bob", "a")
        let moved = rc.enter("amy", "b")
        #expect(moved.isSuccess)
        #expect(moved.events.contains { $0.roomId == "a" && $0.kind == .kicked(reason: .byConflictLogin, ext: "") })
        #expect(moved.events.contains {
            $0.roomId == "a" && $0.kind == .multiLoginSync(joined: false, reason: 2, time: rc.time)
        })
        #expect(rc.state.rooms["a"]!.userSessions["amy"] == nil)
        #expect(rc.state.userRooms["amy"] == ["b"])
    }

    @Test("E5 anonymous users need nickname and avatar, receive but cannot send; the auth mode is returned")
    func e5Anonymous() {
        var shard = TestShard()
        shard.createRoom()
        shard.expectRejected(.enter(EnterRoom(roomId: "r1", nickname: "", avatar: "")),
                             as: TestShard.session("anon-1", mode: .anonymous), .badParameter)
        let out = shard.enter("anon-1", mode: .anonymous)
        guard case .entered(let r) = out.reply else { Issue.record("no reply"); return }
        #expect(r.authMode == .anonymous)
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "hi")),
                             as: TestShard.session("anon-1", mode: .anonymous), .anonymousCannotSend)
        shard.enter("amy", mode: .independent)
        let sent = shard.user("amy", .sendMessage(SendMessage(roomId: "r1", body: "hi")))
        #expect(sent.isSuccess && sent.events.first?.audience == .room)
    }

    @Test("E7 policy decisions: singleDevice kicks the older session with reason 3; multiDevice syncs join and leave")
    func e7DevicePolicy() {
        var single = AppPolicy()
        single.devicePolicy = .singleDevice
        var shard = TestShard(policy: single)
        shard.createRoom()
        shard.enter("amy", device: 1)
        let second = shard.enter("amy", device: 2)
        #expect(second.events.contains {
            $0.audience == .sessions(["amy#1"]) && $0.kind == .kicked(reason: .byConflictLogin, ext: "")
        })
        #expect(second.notificationTypes.isEmpty, "the user never went offline: no 301 / 302")
        #expect(shard.state.rooms["r1"]!.userSessions["amy"] == ["amy#2"])

        var multi = TestShard()
        multi.createRoom()
        multi.enter("amy", device: 1)
        let join = multi.enter("amy", device: 2)
        #expect(join.events.contains {
            $0.audience == .sessions(["amy#1"]) && $0.kind == .multiLoginSync(joined: true, reason: 0, time: multi.time)
        })
        let leave = multi.user("amy", .exit(roomId: "r1"), device: 2)
        #expect(leave.events.contains {
            $0.audience == .sessions(["amy#1"]) && $0.kind == .multiLoginSync(joined: false, reason: 1, time: multi.time)
        })
        // A room-level policy overrides the app's.
        multi.run(.setRoomPolicy(RoomPolicyUpdate(roomId: "r1", devicePolicy: .singleDevice)))
        let override = multi.enter("amy", device: 3)
        #expect(override.events.contains { $0.kind == .kicked(reason: .byConflictLogin, ext: "") })
    }

    @Test("E9 kick results carry roomId, reason 1 / 2 / 3 / 5 and ext")
    func e9KickReasons() {
        var shard = TestShard.populated()
        let kick = shard.user("boss", .kick(MemberUpdate(roomId: "r1", userId: "dave", notifyExt: "spam")))
        #expect(kick.events.contains { $0.roomId == "r1" && $0.kind == .kicked(reason: .byManager, ext: "spam") })
        let block = shard.user("boss", .setBlocked(MemberUpdate(roomId: "r1", userId: "erin", notifyExt: "b")))
        #expect(block.events.contains { $0.kind == .kicked(reason: .blacklist, ext: "b") })
        #expect(KickReason.allCases.map(\.rawValue) == [1, 2, 3, 5])
        let close = shard.run(.closeRoom(roomId: "r1", ext: "gone"))
        #expect(close.events.contains { $0.kind == .kicked(reason: .invalidRoom, ext: "gone") })
    }

    @Test("E10 exit: the session stops receiving, 302 is sent if enabled (switchable per room)")
    func e10Exit() {
        var shard = TestShard()
        shard.createRoom()
        shard.enter("amy", notifyExt: "bye-ext")
        shard.enter("bob")
        let exit = shard.user("amy", .exit(roomId: "r1"))
        #expect(exit.notificationTypes == [.exit])
        #expect(exit.notifications.first?.notifyExt == "bye-ext")
        #expect(shard.state.rooms["r1"]!.sessions["amy#1"] == nil)
        shard.expectRejected(.fetchRoomInfo(roomId: "r1"), as: TestShard.session("amy"), .notEntered)
        shard.run(.setRoomPolicy(RoomPolicyUpdate(roomId: "r1", enterExitNotifications: false)))
        let quiet = shard.user("bob", .exit(roomId: "r1"))
        #expect(quiet.isSuccess && quiet.notificationTypes.isEmpty)
    }

    @Test("E11 RC status events: joined with response, quit, destroyed with a type")
    func e11StatusEvents() {
        var shard = TestShard()
        shard.createRoom()
        shard.enter("bob")
        let joined = shard.enter("amy")
        #expect(joined.events.contains {
            $0.audience == .sessions(["amy#1"]) && $0.kind == .status(.joined(memberCount: 2, time: shard.time))
        })
        let quit = shard.user("amy", .exit(roomId: "r1"))
        #expect(quit.events.contains { $0.audience == .sessions(["amy#1"]) && $0.kind == .status(.quit) })
        let destroyed = shard.run(.closeRoom(roomId: "r1", ext: ""))
        #expect(destroyed.events.contains {
            $0.audience == .sessions(["bob#1"]) && $0.kind == .status(.destroyed(type: 0))
        })
        // Join failed carries an error code; a missing room is a distinct one (no auto-rejoin).
        shard.expectRejected(.enter(EnterRoom(roomId: "nope")), as: TestShard.session("amy"), .roomNotFound)
    }

    @Test("E12 member change events (join / quit with the current count) when enabled per app")
    func e12MemberChange() {
        var policy = AppPolicy()
        policy.memberChangeEvents = true
        var shard = TestShard(policy: policy)
        shard.createRoom()
        shard.enter("amy")
        let join = shard.enter("bob")
        #expect(join.events.contains {
            $0.audience == .room && $0.kind == .memberChange([MemberAction(userId: "bob", action: .join)], memberCount: 2)
        })
        let quit = shard.user("amy", .exit(roomId: "r1"))
        #expect(quit.events.contains {
            $0.kind == .memberChange([MemberAction(userId: "amy", action: .quit)], memberCount: 1)
        })
        var off = TestShard()
        off.createRoom()
        let silent = off.enter("amy")
        #expect(!silent.events.contains { if case .memberChange = $0.kind { true } else { false } })
    }
}

/// E3 across shards: the user's home shard holds a slot per room the user is in.
@Suite struct RoomSlotRulesTests {
    @Test func E3_theHomeShardRefusesTheEleventhRoomWhateverShardItIsIn() throws {
        var home = TestShard()
        for i in 0..<10 { #expect(home.user("ann", .claimRoomSlot(roomId: "room-\(i)")).isSuccess) }
        // Claiming a room the session already holds changes nothing.
        let before = home.state.snapshot()
        #expect(home.user("ann", .claimRoomSlot(roomId: "room-3")).isSuccess)
        #expect(home.state.snapshot() == before)
        home.expectRejected(.claimRoomSlot(roomId: "room-10"), as: TestShard.session("ann"), .tooManyRooms)
        // A second device in a room the user is already in takes no new room.
        #expect(home.user("ann", .claimRoomSlot(roomId: "room-0"), device: 2).isSuccess)
        #expect(home.state.slotRooms(of: "ann").count == 10)
        // Releasing one frees a room; releasing twice is harmless.
        #expect(home.user("ann", .releaseRoomSlot(roomId: "room-5")).isSuccess)
        #expect(home.user("ann", .releaseRoomSlot(roomId: "room-5")).isSuccess)
        #expect(home.user("ann", .claimRoomSlot(roomId: "room-10")).isSuccess)
        // Only sessions claim; the slots survive a snapshot.
        home.expectRejected(.claimRoomSlot(roomId: "x"), .noPermission)
        home.expectRejected(.claimRoomSlot(roomId: ""), as: TestShard.session("ann"), .badParameter)
        let restored = try RoomsState(restoring: home.state.snapshot())
        #expect(restored.slotRooms(of: "ann") == home.state.slotRooms(of: "ann"))
    }

    @Test func E3_withTheOneRoomPolicyTheClaimAnswersTheOtherRoomsAndDoesNotCount() {
        var policy = AppPolicy()
        policy.oneRoomPerUser = true
        var home = TestShard(policy: policy)
        #expect(home.user("ann", .claimRoomSlot(roomId: "b")).reply == .roomIds([]))
        #expect(home.user("ann", .claimRoomSlot(roomId: "a"), device: 2).reply == .roomIds(["b"]))
        // No 10-room count under the policy: the user is about to leave the others.
        for i in 0..<12 { #expect(home.user("ann", .claimRoomSlot(roomId: "room-\(i)")).isSuccess) }
        #expect(home.user("ann", .claimRoomSlot(roomId: "z")).reply == .roomIds(["a", "b"] + (0..<12).map { "room-\($0)" }.sorted()))
    }

    @Test func E3_yieldRoomKicksTheUsersSessionsWithReason3AndTellsTheirDevices() {
        var policy = AppPolicy()
        policy.oneRoomPerUser = true
        var other = TestShard(policy: policy)
        other.createRoom("a")
        other.enter("amy", "a")
        other.enter("amy", "a", device: 2)
        other.enter("bob", "a")
        let out = other.user("amy", .yieldRoom(roomId: "b-elsewhere-is-not-here"))
        #expect(out.isSuccess && out.events.isEmpty)  // a room the user is not in: nothing happens
        let yielded = other.user("amy", .yieldRoom(roomId: "a"))
        #expect(yielded.events.filter { $0.kind == .kicked(reason: .byConflictLogin, ext: "") }.count == 1)
        #expect(yielded.events.contains { $0.kind == .multiLoginSync(joined: false, reason: 2, time: other.time) })
        #expect(other.state.rooms["a"]!.userSessions["amy"] == nil)
        #expect(other.state.rooms["a"]!.userSessions["bob"] != nil)
        // Only a session of the user itself, and only under the policy.
        other.expectRejected(.yieldRoom(roomId: "a"), .noPermission)
        var plain = TestShard()
        plain.createRoom("a")
        plain.enter("amy", "a")
        plain.expectRejected(.yieldRoom(roomId: "a"), as: TestShard.session("amy"), .noPermission)
        #expect(plain.state.rooms["a"]!.userSessions["amy"] != nil)
    }

    @Test func E3_aLostEdgeReleasesItsSlots() {
        var home = TestShard()
        home.run(.claimRoomSlot(roomId: "a"), as: .session(SessionIdentity(userId: "bo", sessionId: "s1", edgeId: "e1")))
        home.run(.claimRoomSlot(roomId: "b"), as: .session(SessionIdentity(userId: "bo", sessionId: "s2", edgeId: "e2")))
        #expect(home.state.edgesWithSessions == ["e1", "e2"])
        home.run(.sessionLost(edgeId: "e1"))
        #expect(home.state.slotRooms(of: "bo") == ["b"])
        #expect(home.state.edgesWithSessions == ["e2"])
    }

    @Test("C5 an enter replacing the user's session on a draining edge moves it in silence: no 302/301, no multi-login sync, transient queue elements kept")
    func c5HandOverKeepsTheUserOnline() throws {
        var shard = TestShard()
        shard.createRoom()
        shard.enter("bob")
        shard.enter("amy", device: 1, edge: "edge-2")
        shard.user("amy", .queueOffer(QueueOffer(roomId: "r1", key: "seat", value: "amy", transient: true)))
        let moved = shard.run(.enter(EnterRoom(roomId: "r1", nickname: "nick-amy", avatar: "https://a/amy",
                                               replacing: "amy#1")),
                              as: TestShard.session("amy", 2, edge: "edge-3"))
        #expect(moved.isSuccess)
        #expect(moved.notifications.isEmpty, "no 301 (and no 302) for a session handed over: \(moved.notificationTypes)")
        #expect(!moved.events.contains { if case .multiLoginSync = $0.kind { true } else { false } })
        let room = try #require(shard.state.rooms["r1"])
        #expect(room.userSessions["amy"] == ["amy#2"] && room.sessions["amy#1"] == nil)
        #expect(room.sessions["amy#2"]?.edgeId == "edge-3")
        let queue = shard.user("bob", .queueList(roomId: "r1"))
        guard case .queue(let items) = queue.reply else { Issue.record("no queue"); return }
        #expect(items.map(\.key) == ["seat"], "the transient element stays with its online owner")
        // The old edge's late exit for the handed-over session changes nothing.
        let late = shard.run(.exit(roomId: "r1"), as: TestShard.session("amy", 1, edge: "edge-2"))
        #expect(late.notifications.isEmpty)
        #expect(shard.state.rooms["r1"]!.userSessions["amy"] == ["amy#2"])
    }

    @Test("C5 replacing a session that is gone, or another user's, is a plain enter")
    func c5ReplacingSomeoneElseOrNothingIsAPlainEnter() throws {
        var shard = TestShard()
        shard.createRoom()
        shard.enter("bob")
        let fresh = shard.run(.enter(EnterRoom(roomId: "r1", nickname: "a", avatar: "https://a/amy", replacing: "amy#1")),
                              as: TestShard.session("amy", 2))
        #expect(fresh.notificationTypes == [.enter], "the user was offline: 301 as usual")
        let theft = shard.run(.enter(EnterRoom(roomId: "r1", nickname: "e", avatar: "https://a/eve", replacing: "bob#1")),
                              as: TestShard.session("eve", 1))
        #expect(theft.isSuccess && theft.notificationTypes == [.enter])
        #expect(shard.state.rooms["r1"]!.sessions["bob#1"] != nil, "another user's session cannot be taken over")
        shard.expectRejected(.enter(EnterRoom(roomId: "r1", nickname: "c", avatar: "https://a/c",
                                              replacing: .bytes(129))),
                             as: TestShard.session("carl", 1), .badParameter)
    }
}
