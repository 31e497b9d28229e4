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
}
