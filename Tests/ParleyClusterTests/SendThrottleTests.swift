import Testing
@testable import ParleyCluster
import ParleyRooms

/// SPEC A1 on the shard leader: a user's messages into a room and the room's together are token buckets.
@Suite struct SendThrottleTests {
    static let budget = SendBudget(userMessagesPerSecond: 2, userBurst: 3, roomMessagesPerSecond: 4, roomBurst: 5)

    @Test func A1_aUserGetsItsBurstThenItsRateAndIsToldWhenToRetry() {
        let throttle = SendThrottle()
        for _ in 0..<3 { #expect(throttle.admit(roomId: "r", userId: "a", budget: Self.budget, now: 1_000) == nil) }
        #expect(throttle.admit(roomId: "r", userId: "a", budget: Self.budget, now: 1_000) == 500, "2 a second: next in 500 ms")
        #expect(throttle.admit(roomId: "r", userId: "a", budget: Self.budget, now: 1_499) != nil)
        #expect(throttle.admit(roomId: "r", userId: "a", budget: Self.budget, now: 1_500) == nil)
        // Another room, or another user, has its own bucket.
        #expect(throttle.admit(roomId: "q", userId: "a", budget: Self.budget, now: 1_500) == nil)
    }

    @Test func A1_theRoomCapsAllSendersAndARefusalCostsTheUserNothing() {
        let throttle = SendThrottle()
        var admitted = 0
        for user in ["a", "b", "c"] {
            for _ in 0..<3 where throttle.admit(roomId: "r", userId: user, budget: Self.budget, now: 0) == nil { admitted += 1 }
        }
        #expect(admitted == 5, "the room's burst")
        // c was refused by the room, not by its own bucket: once the room refills, c still has its burst.
        #expect(throttle.admit(roomId: "r", userId: "c", budget: Self.budget, now: 500) == nil)
        #expect(throttle.admit(roomId: "r", userId: "c", budget: Self.budget, now: 750) == nil)
    }

    @Test func A1_idleBucketsAreDropped() {
        let throttle = SendThrottle()
        _ = throttle.admit(roomId: "r", userId: "a", budget: Self.budget, now: 0)
        #expect(throttle.count == 2)
        throttle.dropIdle(now: SendThrottle.idleMillis + 1)
        #expect(throttle.count == 0)
    }

    /// The highest budgets are "no limit": the leader keeps no bucket and a follower need not call the leader
    /// (RaftDriver passes such messages on inside Raft); any lower budget, the default among them, is a limit.
    @Test func A1_onlyTheHighestBudgetsTurnTheCheckOff() {
        #expect(SendBudget.unlimited.isUnlimited)
        #expect(!SendBudget().isUnlimited)
        var almost = SendBudget.unlimited
        almost.roomBurst = 999_999
        #expect(!almost.isUnlimited)
    }
}
