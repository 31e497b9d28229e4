import Testing
@testable import ParleyEdge

/// Issue 24: token guessing is slowed per remote address and per account.
@Suite struct LoginThrottleTests {
    let t0 = ContinuousClock.now

    @Test func fiveFailuresInAWindowHoldAKeyUntilTheWindowEnds() {
        var throttle = LoginThrottle(limit: 5, window: .seconds(60))
        let keys = LoginThrottle.keys(remote: "10.0.0.9", appKey: "app", account: "alice")
        for i in 0..<5 {
            #expect(throttle.retryAfter(keys, at: t0 + .seconds(i)) == nil)
            throttle.failed(keys, at: t0 + .seconds(i))
        }
        #expect(throttle.retryAfter(keys, at: t0 + .seconds(10)) == .seconds(50))
        // Another address for the same account is held too (the account's key), and so is another account
        // from the same address.
        #expect(throttle.retryAfter(LoginThrottle.keys(remote: "10.0.0.7", appKey: "app", account: "alice"), at: t0 + .seconds(10)) != nil)
        #expect(throttle.retryAfter(LoginThrottle.keys(remote: "10.0.0.9", appKey: "app", account: "bob"), at: t0 + .seconds(10)) != nil)
        // A fresh address and account are not.
        #expect(throttle.retryAfter(LoginThrottle.keys(remote: "10.0.0.7", appKey: "app", account: "bob"), at: t0 + .seconds(10)) == nil)
        // After the window, both may try again.
        #expect(throttle.retryAfter(keys, at: t0 + .seconds(60)) == nil)
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
