import Testing
@testable import ParleyRooms

@Suite struct RoomRulesTests {
    @Test("R1 a room has id, name, announcement, creator, ext ≤ 4 KiB, broadcastUrl, queue level, mute, state, online count")
    func r1RoomModel() throws {
        var shard = TestShard()
        shard.run(.createRoom(CreateRoom(roomId: "r1", creator: "owner", name: "Live", announcement: "hi",
                                         ext: .bytes(4096), broadcastUrl: "rtmp://x", queueModificationLevel: .managers)))
        shard.enter("amy")
        shard.enter("amy", device: 2)
        shard.enter("bob")
        let outcome = shard.run(.fetchRoomInfo(roomId: "r1"))
        guard case .roomInfo(let view) = try #require(outcome.reply) else { Issue.record("no info"); return }
        #expect(view.info.name == "Live" && view.info.announcement == "hi" && view.info.creator == "owner")
        #expect(view.info.broadcastUrl == "rtmp://x" && view.info.queueModificationLevel == .managers)
        #expect(view.info.ext.utf8.count == 4096 && !view.info.isMuted && view.info.isOpen)
        #expect(view.onlineUserCount == 2, "online count counts distinct users, not devices")
        shard.expectRejected(.createRoom(CreateRoom(roomId: "r2", creator: "o", name: "n", ext: .bytes(4097))),
                             .badParameter)
    }

    @Test("R2 rooms are created and closed only by the server API; closing kicks with reason 1 and sends 311")
    func r2CreateAndClose() {
        var shard = TestShard()
        shard.expectRejected(.createRoom(CreateRoom(roomId: "r1", creator: "amy", name: "n")),
                             as: TestShard.session("amy"), .noPermission)
        shard.createRoom()
        shard.enter("amy")
        shard.expectRejected(.closeRoom(roomId: "r1", ext: ""), as: TestShard.session("amy"), .noPermission)
        let close = shard.run(.closeRoom(roomId: "r1", ext: "bye"))
        #expect(close.notificationTypes == [.closed])
        #expect(close.events.contains {
            $0.kind == .kicked(reason: .invalidRoom, ext: "bye") && $0.audience == .sessions(["amy#1"])
        })
        #expect(close.events.contains { $0.kind == .status(.destroyed(type: 0)) })
        #expect(shard.state.rooms["r1"]!.sessions.isEmpty)
        #expect(shard.state.userRooms["amy"] == nil)
        shard.expectRejected(.enter(EnterRoom(roomId: "r1", nickname: "a")), as: TestShard.session("amy"),
                             .roomClosed)
        #expect(shard.run(.reopenRoom(roomId: "r1")).isSuccess)
        #expect(shard.enter("amy").isSuccess)
    }

    @Test("R3 only a user who has entered may fetch room info from the client; the app server always may")
    func r3FetchInfoRequiresEntry() {
        var shard = TestShard()
        shard.createRoom()
        shard.expectRejected(.fetchRoomInfo(roomId: "r1"), as: TestShard.session("amy"), .notEntered)
        shard.enter("amy")
        #expect(shard.user("amy", .fetchRoomInfo(roomId: "r1")).isSuccess)
        #expect(shard.run(.fetchRoomInfo(roomId: "r1")).isSuccess)
    }

    @Test("R4 creator or managers update room info; needNotify sends 312 with notifyExt; invalid fields rejected")
    func r4UpdateRoomInfo() {
        var shard = TestShard.populated()
        shard.expectRejected(.updateRoom(UpdateRoom(roomId: "r1", name: "x")), as: TestShard.session("carol"),
                             .noPermission)
        shard.expectRejected(.updateRoom(UpdateRoom(roomId: "r1", ext: .bytes(4097))), as: TestShard.session("boss"),
                             .badParameter)
        shard.expectRejected(.updateRoom(UpdateRoom(roomId: "r1", name: "")), as: TestShard.session("boss"),
                             .badParameter)
        let out = shard.user("boss", .updateRoom(UpdateRoom(roomId: "r1", name: "New", announcement: "a",
                                                            broadcastUrl: "u", ext: "e",
                                                            queueModificationLevel: .managers, notifyExt: "nx")))
        #expect(out.notificationTypes == [.infoUpdated])
        #expect(out.notifications.first?.notifyExt == "nx")
        #expect(out.notifications.first?.source.userId == "boss")
        let info = shard.state.rooms["r1"]!.info
        #expect(info.name == "New" && info.announcement == "a" && info.broadcastUrl == "u" && info.ext == "e")
        #expect(info.queueModificationLevel == .managers)
        let quiet = shard.user("owner", .updateRoom(UpdateRoom(roomId: "r1", name: "Q", needNotify: false)))
        #expect(quiet.isSuccess && quiet.events.isEmpty)
    }

    @Test("R5 room-wide mute: only creator and managers speak; 318 / 319 and RC ban types 3 / 2")
    func r5RoomMute() {
        var shard = TestShard.populated()
        shard.expectRejected(.setRoomMute(RoomSwitch(roomId: "r1", enable: true)), as: TestShard.session("carol"),
                             .noPermission)
        let mute = shard.user("boss", .setRoomMute(RoomSwitch(roomId: "r1", enable: true, notifyExt: "quiet")))
        #expect(mute.notificationTypes == [.roomMuted])
        #expect(mute.events.contains { if case .ban(.roomMute, _, _, _, "quiet") = $0.kind { true } else { false } })
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "hi")), as: TestShard.session("carol"),
                             .roomMuted)
        #expect(shard.user("boss", .sendMessage(SendMessage(roomId: "r1", body: "hi"))).isSuccess)
        #expect(shard.user("owner", .sendMessage(SendMessage(roomId: "r1", body: "hi"))).isSuccess)
        let unmute = shard.user("owner", .setRoomMute(RoomSwitch(roomId: "r1", enable: false)))
        #expect(unmute.notificationTypes == [.roomUnmuted])
        #expect(unmute.events.contains { if case .ban(.roomUnmute, _, _, _, _) = $0.kind { true } else { false } })
        #expect(shard.user("carol", .sendMessage(SendMessage(roomId: "r1", body: "hi"))).isSuccess)
    }

    @Test("R6 users on the mute allowlist speak during room-wide mute; add / remove events")
    func r6Allowlist() {
        var shard = TestShard.populated()
        shard.user("owner", .setRoomMute(RoomSwitch(roomId: "r1", enable: true)))
        let add = shard.user("boss", .updateAllowlist(RoomSwitch(roomId: "r1", enable: true, userIds: ["dave"])))
        #expect(add.events.contains { $0.kind == .ban(.allowlistAdd, durationMillis: 0, operateTime: shard.time,
                                                     userIds: ["dave"], extra: "") })
        #expect(shard.user("dave", .sendMessage(SendMessage(roomId: "r1", body: "hi"))).isSuccess)
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "hi")), as: TestShard.session("erin"),
                             .roomMuted)
        let remove = shard.user("boss", .updateAllowlist(RoomSwitch(roomId: "r1", enable: false, userIds: ["dave"])))
        #expect(remove.events.contains { if case .ban(.allowlistRemove, _, _, ["dave"], _) = $0.kind { true } else { false } })
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "hi")), as: TestShard.session("dave"),
                             .roomMuted)
    }
}
