import Testing
import ParleyIM

/// Seed 004, "User relationship": friends. Each test names the behaviour; "amy" and "tom" live on two shards,
/// so every change to the other user goes through the outbox and the relay.
@Suite struct FriendTests {
    @Test("004 NIMUserOperationAdd: add without verification makes both friends; the target gets FriendAdd(add), both devices onFriendChanged")
    func addWithoutVerification() {
        var world = ImWorld()
        #expect(world.run("amy", .friend(.add, target: "tom", message: "")) ==
                .success([ImEvent(account: "amy", kind: .friendChanged(friend: "tom", isFriend: true))]))
        #expect(world.user("amy").friendList == ["tom"] && world.user("tom").friendList == ["amy"])
        #expect(world.notifications(of: "tom").map(\.kind) == [.friendNotification(source: "amy", target: "tom", operation: .add, message: "")])
        #expect(world.notifications(of: "tom").map(\.seq) == [1], "the first item of tom's sequence")
        #expect(world.friendChanges(of: "tom") == [.friendChanged(friend: "amy", isFriend: true)])
        #expect(world.shards.allSatisfy { $0.outbox.isEmpty }, "every effect confirmed")
        #expect(world.run("amy", .friend(.add, target: "tom", message: "")).errorCode == .alreadyFriends)
    }

    @Test("004 NIMUserOperationRequest then Verify: the request with its message reaches the target; accepting befriends both and tells the requester")
    func requestThenVerify() {
        var world = ImWorld()
        world.run("amy", .friend(.request, target: "tom", message: "Request for pass"))
        #expect(world.user("amy").outgoing["tom"]?.message == "Request for pass")
        #expect(world.user("tom").incoming["amy"]?.message == "Request for pass")
        #expect(world.notifications(of: "tom").map(\.kind) == [.friendNotification(source: "amy", target: "tom", operation: .request,
                                                                                    message: "Request for pass")])
        #expect(world.user("amy").friendList.isEmpty, "a request befriends no one")
        world.run("tom", .friend(.verify, target: "amy", message: ""))
        #expect(world.user("amy").friendList == ["tom"] && world.user("tom").friendList == ["amy"])
        #expect(world.user("amy").outgoing.isEmpty && world.user("tom").incoming.isEmpty)
        #expect(world.notifications(of: "amy").map(\.kind) == [.friendNotification(source: "tom", target: "amy", operation: .verify, message: "")])
        #expect(world.friendChanges(of: "amy") == [.friendChanged(friend: "tom", isFriend: true)])
        #expect(world.friendChanges(of: "tom") == [.friendChanged(friend: "amy", isFriend: true)])
    }

    @Test("004 NIMUserOperationReject: rejecting ends the request on both sides, befriends no one and tells the requester")
    func requestThenReject() {
        var world = ImWorld()
        world.run("amy", .friend(.request, target: "tom", message: "hi"))
        world.run("tom", .friend(.reject, target: "amy", message: ""))
        #expect(world.user("amy").outgoing.isEmpty && world.user("tom").incoming.isEmpty)
        #expect(world.user("amy").friendList.isEmpty && world.user("tom").friendList.isEmpty)
        #expect(world.notifications(of: "amy").map(\.kind) == [.friendNotification(source: "tom", target: "amy", operation: .reject, message: "")])
        #expect(world.run("tom", .friend(.verify, target: "amy", message: "")).errorCode == .noRequest, "answered once")
    }

    @Test("004 Verify and Reject need an unexpired request from that user; refused changing nothing")
    func verifyNeedsARequest() {
        var world = ImWorld()
        let before = world.shards.map { $0.snapshot() }
        #expect(world.run("tom", .friend(.verify, target: "amy", message: "")).errorCode == .noRequest)
        #expect(world.run("tom", .friend(.reject, target: "amy", message: "")).errorCode == .noRequest)
        #expect(world.shards.map { $0.snapshot() } == before)
        world.run("amy", .friend(.request, target: "tom", message: ""))
        world.time += ImLimits().requestLifetimeMillis
        #expect(world.run("tom", .friend(.verify, target: "amy", message: "")).errorCode == .noRequest, "expired")
    }

    @Test("004 deleteFriend:removeAlias: both are unfriended; the deleter's remark goes only when asked; the other's stays")
    func deleteFriendKeepsOrDropsTheRemark() {
        var world = ImWorld()
        world.run("amy", .friend(.add, target: "tom", message: ""))
        world.run("amy", .updateRemark(target: "tom", remark: "Tommy"))
        world.run("tom", .updateRemark(target: "amy", remark: "A."))
        world.run("amy", .deleteFriend(target: "tom", removeRemark: false))
        #expect(world.user("amy").friendList.isEmpty && world.user("tom").friendList.isEmpty)
        #expect(world.user("amy").remarks["tom"] == "Tommy" && world.user("tom").remarks["amy"] == "A.")
        #expect(world.friendChanges(of: "tom").last == .friendChanged(friend: "amy", isFriend: false))
        world.run("amy", .friend(.add, target: "tom", message: ""))
        world.run("amy", .deleteFriend(target: "tom", removeRemark: true))
        #expect(world.user("amy").remarks["tom"] == nil && world.user("tom").remarks["amy"] == "A.")
        #expect(world.run("amy", .deleteFriend(target: "tom", removeRemark: true)).errorCode == .notFriend)
    }

    @Test("004 isMyFriend, myFriends and updateUser: the list is sorted; a remark needs a friend")
    func friendListAndRemark() {
        var world = ImWorld()
        for other in ["zed", "bea", "ned"] { world.run("amy", .friend(.add, target: other, message: "")) }
        #expect(world.user("amy").friendList == ["bea", "ned", "zed"])
        #expect(world.user("bea").friendList == ["amy"], "same shard: the same path")
        #expect(world.run("amy", .updateRemark(target: "tom", remark: "x")).errorCode == .notFriend)
        #expect(world.run("amy", .updateRemark(target: "zed", remark: "Z")) ==
                .success([ImEvent(account: "amy", kind: .friendChanged(friend: "zed", isFriend: true))]))
        #expect(world.user("amy").remarks["zed"] == "Z")
    }

    @Test("Choice: a request to a friend and any friend operation on oneself are refused")
    func refusals() {
        var world = ImWorld()
        world.run("amy", .friend(.add, target: "tom", message: ""))
        #expect(world.run("amy", .friend(.request, target: "tom", message: "")).errorCode == .alreadyFriends)
        for op in FriendOperation.allCases {
            #expect(world.run("amy", .friend(op, target: "amy", message: "")).errorCode == .oneself)
        }
    }

    @Test("Bad input: empty or oversize accounts, messages and remarks answer 414 and leave the state byte-identical; an unknown user is no error")
    func badInput() {
        var world = ImWorld()
        world.run("amy", .friend(.add, target: "tom", message: ""))
        let before = world.shards.map { $0.snapshot() }
        let long = String(repeating: "x", count: 129)
        let bad: [(String, ImCommand)] = [
            ("", .friend(.add, target: "tom", message: "")), (long, .setBlocked(target: "tom", true)),
            ("amy", .friend(.add, target: "", message: "")), ("amy", .friend(.request, target: long, message: "")),
            ("amy", .friend(.request, target: "ned", message: String(repeating: "m", count: 257))),
            ("amy", .updateRemark(target: "tom", remark: String(repeating: "r", count: 129))),
            ("amy", .setMuted(target: "", true)), ("amy", .deleteFriend(target: long, removeRemark: false)),
        ]
        for (actor, command) in bad {
            #expect(world.run(actor, command).errorCode == .badParameter, "\(command)")
        }
        #expect(world.shards.map { $0.snapshot() } == before)
        #expect(world.run("amy", .friend(.request, target: "nobody-yet", message: "")).errorCode == nil)
    }

    @Test("Limit: a full friend list refuses another friend, changing nothing")
    func friendLimit() {
        var limits = ImLimits()
        limits.maxFriends = 2
        var world = ImWorld(limits: limits)
        world.run("amy", .friend(.add, target: "tom", message: ""))
        world.run("amy", .friend(.add, target: "ned", message: ""))
        let before = world.shards.map { $0.snapshot() }
        #expect(world.run("amy", .friend(.add, target: "zed", message: "")).errorCode == .limitExceeded)
        #expect(world.shards.map { $0.snapshot() } == before)
    }

    @Test("Limit: requests waiting are capped as friends are (no unbounded records on others' shards); renewing one is not a new one")
    func outgoingRequestLimit() {
        var limits = ImLimits()
        limits.maxFriends = 2
        var world = ImWorld(limits: limits)
        world.run("amy", .friend(.request, target: "tom", message: "1"))
        world.run("amy", .friend(.request, target: "ned", message: "1"))
        let before = world.shards.map { $0.snapshot() }
        #expect(world.run("amy", .friend(.request, target: "zed", message: "")).errorCode == .limitExceeded)
        #expect(world.shards.map { $0.snapshot() } == before)
        #expect(world.run("amy", .friend(.request, target: "tom", message: "again")).errorCode == nil)
    }
}

extension Result where Success == [ImEvent], Failure == ImError {
    var errorCode: ImErrorCode? { if case .failure(let e) = self { e.code } else { nil } }
}
