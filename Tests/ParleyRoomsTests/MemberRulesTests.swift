import Testing
@testable import ParleyRooms

@Suite struct MemberRulesTests {
    @Test("M1 fixed members are creator, managers, common and limited, at most the limit; visitors exist only online")
    func m1FixedMembers() {
        var limits = RoomLimits()
        limits.maxFixedMembers = 3
        var shard = TestShard(limits: limits)
        shard.createRoom()
        shard.enter("owner")
        #expect(shard.user("owner", .markManager(MemberUpdate(roomId: "r1", userId: "m"))).isSuccess)
        #expect(shard.user("owner", .markCommon(MemberUpdate(roomId: "r1", userId: "c"))).isSuccess)
        shard.expectRejected(.setMuted(MemberUpdate(roomId: "r1", userId: "x")), as: TestShard.session("owner"),
                             .tooManyFixedMembers)
        #expect(shard.member("owner")?.type == .creator && shard.member("m")?.type == .manager)
        #expect(shard.member("c")?.type == .common)
        shard.enter("v")
        #expect(shard.member("v")?.type == .visitor)
        shard.user("v", .exit(roomId: "r1"))
        #expect(shard.member("v") == nil, "a visitor who leaves is no member")
        #expect(shard.member("c") != nil, "fixed members survive being offline")
        shard.user("owner", .markCommon(MemberUpdate(roomId: "r1", userId: "c", enable: false)))
        #expect(shard.user("owner", .setMuted(MemberUpdate(roomId: "r1", userId: "x"))).isSuccess)
        #expect(shard.member("x")?.type == .limited)
    }

    @Test("M2 role rules exactly as seed 000 lists them")
    func m2RoleRules() {
        var shard = TestShard.populated()
        // Only the creator sets or removes managers.
        shard.expectRejected(.markManager(MemberUpdate(roomId: "r1", userId: "carol")), as: TestShard.session("boss"),
                             .noPermission)
        // Managers cannot act on the creator or on other managers.
        shard.user("owner", .markManager(MemberUpdate(roomId: "r1", userId: "mia")))
        shard.expectRejected(.setMuted(MemberUpdate(roomId: "r1", userId: "mia")), as: TestShard.session("boss"),
                             .noPermission)
        shard.expectRejected(.kick(MemberUpdate(roomId: "r1", userId: "owner")), as: TestShard.session("boss"),
                             .noPermission)
        // A manager cannot be set as an ordinary member; removing a manager makes an ordinary member.
        shard.expectRejected(.markCommon(MemberUpdate(roomId: "r1", userId: "mia")), as: TestShard.session("owner"),
                             .invalidRoleTransition)
        shard.user("owner", .markManager(MemberUpdate(roomId: "r1", userId: "mia", enable: false)))
        #expect(shard.member("mia")?.type == .common)
        // Removing an ordinary member makes a visitor (offline: no member at all).
        shard.user("owner", .markCommon(MemberUpdate(roomId: "r1", userId: "carol", enable: false)))
        #expect(shard.member("carol")?.type == .visitor)
        shard.user("owner", .markCommon(MemberUpdate(roomId: "r1", userId: "mia", enable: false)))
        #expect(shard.member("mia") == nil)
        // A blocklisted visitor becomes fixed, is disconnected and cannot enter until removed.
        shard.user("boss", .setBlocked(MemberUpdate(roomId: "r1", userId: "dave")))
        #expect(shard.member("dave")?.type == .limited && shard.member("dave")?.isOnline == false)
        shard.expectRejected(.enter(EnterRoom(roomId: "r1", nickname: "d")), as: TestShard.session("dave"),
                             .inBlocklist)
        // Removal from the blocklist makes a visitor.
        shard.user("boss", .setBlocked(MemberUpdate(roomId: "r1", userId: "dave", enable: false)))
        #expect(shard.member("dave") == nil)
        #expect(shard.enter("dave").isSuccess)
        #expect(shard.member("dave")?.type == .visitor)
        // Permanent mute makes fixed; lifting makes a visitor and leaves the temporary mute alone.
        shard.user("boss", .setTempMute(MemberUpdate(roomId: "r1", userId: "erin", duration: 600)))
        shard.user("boss", .setMuted(MemberUpdate(roomId: "r1", userId: "erin")))
        #expect(shard.member("erin")?.type == .limited)
        shard.user("boss", .setMuted(MemberUpdate(roomId: "r1", userId: "erin", enable: false)))
        #expect(shard.member("erin")?.type == .visitor)
        #expect(shard.member("erin")?.isTempMuted == true)
        // Temporary mute never changes the role; a repeat replaces the expiry (no accumulation).
        shard.user("boss", .setTempMute(MemberUpdate(roomId: "r1", userId: "erin", duration: 60)))
        #expect(shard.member("erin")?.type == .visitor)
        #expect(shard.member("erin")?.tempMuteDuration == 60)
        // A visitor who leaves is no member at all.
        shard.user("erin", .exit(roomId: "r1"))
        #expect(shard.member("erin") == nil)
    }

    @Test("M3 member record: nickname, avatar, ext, type, mute flags, remaining temp mute seconds, blocklist, online, enter time")
    func m3MemberRecord() throws {
        var shard = TestShard.populated()
        let enteredAt = shard.time + 1
        shard.enter("zed", nickname: "Zed", roomExt: "zx")
        shard.user("owner", .setTempMute(MemberUpdate(roomId: "r1", userId: "zed", duration: 100)))
        shard.time += 30_000
        let out = shard.user("carol", .fetchMembersByIds(RoomUsers(roomId: "r1", userIds: ["zed"])))
        guard case .members(let list) = try #require(out.reply) else { Issue.record("no members"); return }
        let m = try #require(list.first)
        #expect(m.userId == "zed" && m.roomNickname == "Zed" && m.roomAvatar == "https://a/zed" && m.roomExt == "zx")
        #expect(m.type == .visitor && !m.isMuted && m.isTempMuted && m.tempMuteDuration == 70)
        #expect(!m.isInBlackList && m.isOnline && m.enterTime == enteredAt)
    }

    @Test("M4 member paging by type (Regular, Temp, RegularOnline, UnRegularReversedOrder) with an exclusive anchor and a limit")
    func m4Paging() throws {
        var shard = TestShard.populated()
        shard.user("carol", .exit(roomId: "r1"))
        func page(_ kind: MemberQueryKind, anchor: UInt64 = 0, limit: Int = 10) -> [MemberView] {
            if case .members(let list) = shard.run(.fetchMembers(FetchMembers(roomId: "r1", kind: kind, anchor: anchor,
                                                                               limit: limit))).reply { return list }
            return []
        }
        #expect(page(.regular).map(\.userId) == ["carol", "boss", "owner"])
        #expect(page(.regularOnline).map(\.userId) == ["boss", "owner"])
        #expect(page(.temp).map(\.userId) == ["dave", "erin"])
        #expect(page(.unregularReversedOrder).map(\.userId) == ["erin", "dave"])
        let first = page(.regular, limit: 2)
        #expect(first.map(\.userId) == ["carol", "boss"])
        #expect(page(.regular, anchor: first.last!.pageKey, limit: 2).map(\.userId) == ["owner"])
        let tempFirst = page(.temp, limit: 1)
        #expect(page(.temp, anchor: tempFirst[0].pageKey, limit: 1).map(\.userId) == ["erin"])
        shard.expectRejected(.fetchMembers(FetchMembers(roomId: "r1", kind: .regular, limit: 0)), .badParameter)
    }

    @Test("M5 members by ids: at most 20 ids")
    func m5ByIds() {
        var shard = TestShard.populated()
        let twenty = (0 ..< 20).map { "u\($0)" } + []
        #expect(shard.user("dave", .fetchMembersByIds(RoomUsers(roomId: "r1", userIds: twenty))).isSuccess)
        shard.expectRejected(.fetchMembersByIds(RoomUsers(roomId: "r1", userIds: twenty + ["boss"])),
                             as: TestShard.session("dave"), .badParameter)
        let out = shard.user("dave", .fetchMembersByIds(RoomUsers(roomId: "r1", userIds: ["boss", "ghost", "owner"])))
        guard case .members(let list) = out.reply else { Issue.record("no members"); return }
        #expect(list.map(\.userId) == ["boss", "owner"])
    }

    @Test("M6 update my member info (nickname, avatar, ext) with needNotify / notifyExt sends 316")
    func m6UpdateMyInfo() {
        var shard = TestShard.populated()
        let out = shard.user("dave", .updateMyMemberInfo(UpdateMyMemberInfo(roomId: "r1", nickname: "D2",
                                                                            ext: "e2", notifyExt: "n")))
        #expect(out.notificationTypes == [.memberInfoUpdated])
        #expect(out.notifications.first?.source == NotificationMember(userId: "dave", nickname: "D2"))
        #expect(out.notifications.first?.notifyExt == "n" && out.notifications.first?.sourceRoomExt == "e2")
        #expect(shard.member("dave")?.roomNickname == "D2" && shard.member("dave")?.roomExt == "e2")
        let quiet = shard.user("dave", .updateMyMemberInfo(UpdateMyMemberInfo(roomId: "r1", avatar: "x",
                                                                              needNotify: false)))
        #expect(quiet.isSuccess && quiet.events.isEmpty)
    }

    @Test("M7 kick: creator or managers, only users below them; reason 2 with notifyExt and 313")
    func m7Kick() {
        var shard = TestShard.populated()
        shard.expectRejected(.kick(MemberUpdate(roomId: "r1", userId: "dave")), as: TestShard.session("carol"),
                             .noPermission)
        let kick = shard.user("boss", .kick(MemberUpdate(roomId: "r1", userId: "carol", notifyExt: "out")))
        #expect(kick.notificationTypes == [.kicked])
        #expect(kick.notifications.first?.targets.map(\.userId) == ["carol"])
        #expect(kick.notifications.first?.notifyExt == "out")
        #expect(kick.events.contains { $0.audience == .sessions(["carol#1"]) && $0.kind == .kicked(reason: .byManager, ext: "out") })
        let kickManager = shard.user("owner", .kick(MemberUpdate(roomId: "r1", userId: "boss")))
        #expect(kickManager.isSuccess)
        shard.expectRejected(.kick(MemberUpdate(roomId: "r1", userId: "boss")), as: TestShard.session("owner"),
                             .memberNotFound)
    }

    @Test("M8 temporary mute in seconds: 314 / 315 with the duration in ext; RC ban and block events carry durations")
    func m8TempMute() throws {
        var shard = TestShard.populated()
        let mute = shard.user("boss", .setTempMute(MemberUpdate(roomId: "r1", userId: "dave", duration: 90)))
        let n = try #require(mute.notifications.first)
        #expect(n.type == .addTempMute && n.ext == .muteDuration(seconds: 90))
        #expect(mute.events.contains { $0.kind == .ban(.muteUser, durationMillis: 90_000, operateTime: shard.time,
                                                      userIds: ["dave"], extra: "") })
        shard.expectRejected(.sendMessage(SendMessage(roomId: "r1", body: "x")), as: TestShard.session("dave"),
                             .tempMuted)
        shard.time += 91_000
        #expect(shard.user("dave", .sendMessage(SendMessage(roomId: "r1", body: "x"))).isSuccess)
        shard.user("boss", .setTempMute(MemberUpdate(roomId: "r1", userId: "dave", duration: 30)))
        let lift = shard.user("boss", .setTempMute(MemberUpdate(roomId: "r1", userId: "dave", duration: 0)))
        #expect(lift.notificationTypes == [.removeTempMute])
        #expect(lift.notifications.first?.ext == .muteDuration(seconds: 0))
        shard.expectRejected(.setTempMute(MemberUpdate(roomId: "r1", userId: "dave", duration: 43_200 * 60 + 1)),
                             as: TestShard.session("boss"), .badParameter)
        let block = shard.user("boss", .setBlocked(MemberUpdate(roomId: "r1", userId: "erin", duration: 43_200)))
        #expect(block.events.contains { if case .block(true, 2_592_000_000, _, ["erin"], _) = $0.kind { true } else { false } })
        shard.expectRejected(.setBlocked(MemberUpdate(roomId: "r1", userId: "erin", duration: 43_201)),
                             as: TestShard.session("boss"), .badParameter)
        // A timed block runs out by itself.
        shard.time += 2_592_000_001
        #expect(shard.enter("erin").isSuccess)
    }

    @Test("M9 global mute of a user across rooms, and its cancel")
    func m9GlobalMute() {
        var shard = TestShard()
        shard.createRoom("a")
        shard.createRoom("b")
        shard.enter("amy", "a")
        shard.enter("amy", "b")
        shard.expectRejected(.setGlobalMute(GlobalMute(userId: "amy", enable: true)), as: TestShard.session("amy"),
                             .noPermission)
        let mute = shard.run(.setGlobalMute(GlobalMute(userId: "amy", enable: true, minutes: 5, extra: "x")))
        #expect(mute.events.map(\.roomId) == ["a", "b"])
        #expect(mute.events.allSatisfy { $0.audience == .users(["amy"]) })
        #expect(mute.events.first?.kind == .ban(.globalMute, durationMillis: 300_000, operateTime: shard.time,
                                               userIds: ["amy"], extra: "x"))
        shard.expectRejected(.sendMessage(SendMessage(roomId: "b", body: "x")), as: TestShard.session("amy"),
                             .globallyMuted)
        let cancel = shard.run(.setGlobalMute(GlobalMute(userId: "amy", enable: false)))
        #expect(cancel.events.first?.kind == .ban(.globalUnmute, durationMillis: 0, operateTime: shard.time,
                                                 userIds: ["amy"], extra: ""))
        #expect(shard.user("amy", .sendMessage(SendMessage(roomId: "a", body: "x"))).isSuccess)
    }
}
