import Testing
@testable import ParleyEdge

/// Issue 24: token guessing is slowed per remote address and per account; issue 33: without locking the real
/// user out.
@Suite struct LoginThrottleTests {
    let t0 = ContinuousClock.now

    @Test func fiveFailuresInAWindowHoldAKeyUntilTheWindowEnds() {
        var throttle = LoginThrottle(limit: 5, window: .seconds(60))
        func wait(_ remote: String, _ account: String, _ at: Duration) -> Duration? {
            throttle.retryAfter(throttle.holds(remote: remote, appKey: "app", account: account, at: t0 + at), at: t0 + at)
        }
        let keys = LoginThrottle.keys(remote: "10.0.0.9", appKey: "app", account: "alice")
        for i in 0..<5 {
            #expect(wait("10.0.0.9", "alice", .seconds(i)) == nil)
            throttle.failed(keys, at: t0 + .seconds(i))
        }
        #expect(wait("10.0.0.9", "alice", .seconds(10)) == .seconds(50))
        // Another account from the same address is held too (the address's key).
        #expect(wait("10.0.0.9", "bob", .seconds(10)) != nil)
        // Alice herself, on an address that never failed, is not: a stranger cannot lock her out.
        #expect(wait("10.0.0.7", "alice", .seconds(10)) == nil)
        // A guesser spread over addresses: each address that failed for alice is held by her account's key
        // (she has 5 failures) after its first try.
        throttle.failed(LoginThrottle.keys(remote: "10.0.0.20", appKey: "app", account: "alice"), at: t0 + .seconds(11))
        #expect(wait("10.0.0.20", "alice", .seconds(12)) != nil)
        #expect(wait("10.0.0.20", "bob", .seconds(12)) == nil, "that address may still log in others")
        // After the window, all may try again.
        #expect(wait("10.0.0.9", "alice", .seconds(72)) == nil)
    }

    @Test func memoryIsBounded() {
        var throttle = LoginThrottle(limit: 5, window: .seconds(60), maxKeys: 100)
        for i in 0..<1000 { throttle.failed(["address \(i)"], at: t0 + .milliseconds(i)) }
        // The newest keys are still remembered; the map never grew past its bound (checked by behaviour:
        // the oldest were dropped).
        for _ in 0..<4 { throttle.failed(["address 999"], at: t0 + .seconds(1)) }
        #expect(throttle.retryAfter(["address 999"], at: t0 + .seconds(2)) != nil)
        #expect(throttle.retryAfter(["address 0"], at: t0 + .seconds(2)) == nil)
    }
}
