import Testing
import ParleyIM

/// Seed 004: the blocklist and do-not-disturb, each the user's own list, independent of friendship.
@Suite struct BlocklistTests {
    @Test("004 addToBlackList / removeFromBlackBlackList / myBlackList / isUserInBlackList, with onBlackListChanged")
    func blocklist() {
        var world = ImWorld()
        #expect(world.run("amy", .setBlocked(target: "tom", true)) == .success([ImEvent(account: "amy", kind: .blocklistChanged)]))
        world.run("amy", .setBlocked(target: "ned", true))
        #expect(world.user("amy").blocklist == ["ned", "tom"])
        #expect(world.run("amy", .setBlocked(target: "tom", true)) == .success([]), "again: success, no change, no event")
        world.run("amy", .setBlocked(target: "tom", false))
        #expect(world.user("amy").blocklist == ["ned"])
        #expect(world.user("tom").isEmpty, "blocking tells the blocked user nothing")
        #expect(world.run("amy", .setBlocked(target: "amy", true)).errorCode == .oneself)
    }

    @Test("004 Blocklist: a blocked user's one-to-one messages are refused (14201); others reach the receiver with an alert")
    func blockedMessagesAreRefused() {
        var world = ImWorld()
        world.run("tom", .setBlocked(target: "amy", true))
        let tomShard = world.shards[world.shard(of: "tom")]
        #expect(tomShard.delivery(from: "amy", to: "tom") == .failure(ImError(.blocked, "tom blocked amy")))
        #expect(tomShard.delivery(from: "ned", to: "tom") == .success(true))
    }

    @Test("004 Do Not Disturb: updateNotifyState:forUser: mutes a user's alerts — delivered, without an alert; onMuteListChanged")
    func doNotDisturb() {
        var world = ImWorld()
        #expect(world.run("tom", .setMuted(target: "amy", true)) == .success([ImEvent(account: "tom", kind: .muteListChanged)]))
        #expect(world.user("tom").muteList == ["amy"])
        #expect(world.shards[world.shard(of: "tom")].delivery(from: "amy", to: "tom") == .success(false))
        world.run("tom", .setMuted(target: "amy", false))
        #expect(world.shards[world.shard(of: "tom")].delivery(from: "amy", to: "tom") == .success(true))
    }

    @Test("004 The three relationships are independent: blocking or muting a friend keeps the friendship, and unfriending keeps both lists")
    func independent() {
        var world = ImWorld()
        world.run("amy", .friend(.add, target: "tom", message: ""))
        world.run("amy", .setBlocked(target: "tom", true))
        world.run("amy", .setMuted(target: "tom", true))
        #expect(world.user("amy").friendList == ["tom"])
        world.run("amy", .deleteFriend(target: "tom", removeRemark: true))
        #expect(world.user("amy").blocklist == ["tom"] && world.user("amy").muteList == ["tom"])
    }

    @Test("004 Blocklist, issue 33: what a blocked user asks — a friend request, a team invitation, an application — stops at the blocker; a direct add applies silently")
    func blockedUsersStartNothing() {
        var world = ImWorld()
        world.run("tom", .setBlocked(target: "amy", true))
        #expect(world.run("amy", .friend(.request, target: "tom", message: "let me in")).errorCode == nil, "the sender is not told")
        #expect(world.run("amy", .friend(.add, target: "tom", message: "")).errorCode == nil)
        #expect(world.items(of: "tom").isEmpty, "no notification in tom's log")
        #expect(world.user("tom").incoming.isEmpty, "no request waiting")
        // The add itself applies (relationships are independent; friendship stays symmetric), without a word.
        #expect(world.user("tom").friendList == ["amy"])
        world.run("amy", .deleteFriend(target: "tom", removeRemark: true))
        // Someone tom did not block still reaches him.
        world.run("bea", .friend(.request, target: "tom", message: "hi"))
        #expect(world.notifications(of: "tom").count == 1 && world.user("tom").incoming["bea"] != nil)
        // Answers to tom's own requests are no unsolicited traffic: they still arrive.
        world.run("tom", .friend(.request, target: "amy", message: "after all?"))
        world.run("amy", .friend(.verify, target: "tom", message: ""))
        #expect(world.user("tom").friendList == ["amy"], "amy accepted tom's own request")
        // Team invitations and applications from a blocked user, effects like the others.
        let unsolicited: [ImEffect.Change] = [.teamNotice(.invite, teamId: "kite", message: "join"),
                                              .teamNotice(.apply, teamId: "kite", message: "take me")]
        var tomShard = world.shards[world.shard(of: "tom")]
        let (events, upTo) = tomShard.applyEffects(from: 7, unsolicited.enumerated().map {
            OutboxEntry(seq: UInt64($0 + 1), effect: ImEffect(target: "tom", from: "amy", change: $1, at: 5_000)) }, screened: true)
        #expect(events.isEmpty && upTo == 2, "consumed, and nothing of them kept")
    }

    @Test("Issue 33: relayed as plain `effects` (entries written before every node screened), a blocked user's request applies as it always did")
    func unscreenedEffectsApplyAsBefore() {
        var world = ImWorld()
        world.screens = false
        world.run("tom", .setBlocked(target: "amy", true))
        world.run("amy", .friend(.request, target: "tom", message: "old rules"))
        #expect(world.user("tom").incoming["amy"] != nil && world.notifications(of: "tom").count == 1)
    }
}
