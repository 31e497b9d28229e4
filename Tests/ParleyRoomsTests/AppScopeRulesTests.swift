import Testing
@testable import ParleyRooms

/// SPEC A8 in the state machine: rooms of two apps in one shard, `a␟…` and `b␟…`, with users of the same
/// account name. App-wide state — policy, global mutes, the user's rooms and room slots — is each app's own.
@Suite struct AppScopeRulesTests {
    let roomA = AppScope.scoped("lobby", in: "a"), roomB = AppScope.scoped("lobby", in: "b")

    func twoApps() -> TestShard {
        var shard = TestShard()
        shard.createRoom(roomA, creator: "alice")
        shard.createRoom(roomB, creator: "alice")
        return shard
    }

    @Test func idsSplitIntoNamespaceAndLocalPart() {
        #expect(roomA == "a\u{1F}lobby" && roomA != roomB)
        #expect(AppScope.namespace(of: roomA) == "a" && AppScope.local(roomA) == "lobby")
        #expect(AppScope.namespace(of: "lobby") == "" && AppScope.local("lobby") == "lobby")
        #expect(AppScope.scoped("lobby", in: "") == "lobby")
        #expect(AppScope.namespace(ofApp: "old", legacyApp: "old") == "" && AppScope.namespace(ofApp: "a", legacyApp: "old") == "a")
        #expect(!AppScope.isLocal(roomA) && AppScope.isLocal("lobby"))
        #expect(AppScope.user("alice", ofRoom: roomB) == "b\u{1F}alice")
    }

    @Test func anAppsPolicyGovernsOnlyItsRooms() {
        var shard = twoApps()
        var quiet = AppPolicy()
        quiet.enterExitNotifications = false
        #expect(shard.run(.setScopedAppPolicy(namespace: "b", quiet)).errorCode == nil)
        #expect(shard.state.policy(forRoom: roomB).enterExitNotifications == false)
        #expect(shard.state.policy(forRoom: roomA).enterExitNotifications == true)
        // 301 in a's room, none in b's.
        let inA = shard.enter("bob", roomA).events.filter { if case .notification(let n) = $0.kind { n.type == .enter } else { false } }
        let inB = shard.enter("bob", roomB).events.filter { if case .notification(let n) = $0.kind { n.type == .enter } else { false } }
        #expect(inA.count == 1 && inB.isEmpty)
        // Only the app server sets a policy.
        #expect(shard.user("alice", .setScopedAppPolicy(namespace: "a", quiet)).errorCode == .noPermission)
    }

    @Test func aGlobalMuteMutesTheAppsUserOnly() {
        var shard = twoApps()
        shard.enter("alice", roomA)
        shard.enter("alice", roomB)
        #expect(shard.run(.setGlobalMute(GlobalMute(userId: AppScope.scoped("alice", in: "b"), enable: true))).errorCode == nil)
        #expect(shard.user("alice", .sendMessage(SendMessage(roomId: roomB, body: "muted?"))).errorCode == .globallyMuted)
        #expect(shard.user("alice", .sendMessage(SendMessage(roomId: roomA, body: "a's alice speaks"))).errorCode == nil)
    }

    @Test func roomSlotsAndTheUsersRoomsCountPerApp() {
        var limits = RoomLimits()
        limits.maxRoomsPerUser = 1
        var shard = TestShard(limits: limits)
        shard.createRoom(roomA, creator: "owner")
        shard.createRoom(roomB, creator: "owner")
        // b's alice in b's room does not use up a's alice's one room, in slots or in presence.
        #expect(shard.user("alice", .claimRoomSlot(roomId: roomA)).errorCode == nil)
        #expect(shard.user("alice", .claimRoomSlot(roomId: roomB)).errorCode == nil)
        #expect(shard.state.slotRooms(of: AppScope.scoped("alice", in: "a")) == [roomA])
        #expect(shard.enter("alice", roomA).errorCode == nil)
        #expect(shard.enter("alice", roomB).errorCode == nil)
        shard.createRoom(AppScope.scoped("second", in: "a"), creator: "owner")
        #expect(shard.enter("alice", AppScope.scoped("second", in: "a")).errorCode == .tooManyRooms)
    }

    @Test func appPoliciesSurviveASnapshotAndAVersion3SnapshotStillRestores() throws {
        var shard = twoApps()
        var single = AppPolicy()
        single.devicePolicy = .singleDevice
        shard.run(.setScopedAppPolicy(namespace: "a", single))
        let budget = SendBudget(userMessagesPerSecond: 3, userBurst: 4, roomMessagesPerSecond: 50, roomBurst: 60)
        shard.run(.setSendBudget(namespace: "a", budget))
        let restored = try RoomsState(restoring: shard.state.snapshot())
        #expect(restored.appPolicies == ["a": single] && restored.snapshot() == shard.state.snapshot())
        #expect(restored.sendBudget(forRoom: AppScope.scoped("x", in: "a")) == budget)
        #expect(restored.sendBudget(forRoom: AppScope.scoped("x", in: "b")) == SendBudget())
        // A version-3 snapshot is the same bytes without the app policies and the send budgets (A1, version 5),
        // a version-4 one without the send budgets.
        var v3 = TestShard()
        v3.createRoom()
        var bytes = v3.state.snapshot()
        #expect(bytes[4] == 5)
        let limitsAndPolicy = 5 + RoomLimits().encoded().count + AppPolicy().encoded().count
        #expect(bytes[limitsAndPolicy] == 0 && bytes[limitsAndPolicy + 1] == 0)
        var v4 = bytes
        v4[4] = 4
        v4.remove(at: limitsAndPolicy + 1)  // the empty budget map's count
        #expect(try RoomsState(restoring: v4).roomIds == ["r1"])
        bytes[4] = 3
        bytes.removeSubrange(limitsAndPolicy...(limitsAndPolicy + 1))  // both empty maps' counts
        let old = try RoomsState(restoring: bytes)
        #expect(old.roomIds == ["r1"] && old.appPolicies.isEmpty)
    }
}
