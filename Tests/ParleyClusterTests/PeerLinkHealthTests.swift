import NIOCore
import Testing
@testable import ParleyCluster
@testable import ParleyTransport

/// Issue 15: a link that cannot reach its peer says so — with its error, at once, and then once per log
/// period (doubling), never once per retry.
@Suite struct PeerLinkHealthTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    func at(_ ms: Int64) -> NIODeadline { t0 + .milliseconds(ms) }

    @Test func aDeadPeerIsLoggedAtOnceThenOncePerDoublingPeriodNotPerRetry() {
        var health = PeerLinkHealth(firstLogPeriod: .seconds(2), maxLogPeriod: .seconds(8))
        // The link's own retry schedule: 50 ms doubling to 2 s, for 40 s.
        var now: Int64 = 0, delay: Int64 = 50
        var logged: [(Int64, PeerLinkHealth.Report)] = []
        var attempts = 0
        while now < 40_000 {
            attempts += 1
            if let r = health.failed("connection refused", at: at(now)) { logged.append((now, r)) }
            now += delay
            delay = min(delay * 2, 2000)
        }
        #expect(attempts > 20)
        // Lines at 0, then ≥ 2 s, ≥ 4 s, then every ≥ 8 s: 6 or 7 lines for 40 s, not one per attempt.
        #expect((5...7).contains(logged.count), "\(logged.map(\.0))")
        #expect(logged.first?.0 == 0)
        for (a, b) in zip(logged, logged.dropFirst()) { #expect(b.0 - a.0 >= 2000) }
        // Every attempt is counted in exactly one line, and each names the error; never up, so no lastUp.
        let counted = logged.reduce(0) { sum, line in
            guard case .unreachable(let error, let n, let downFor) = line.1 else { return sum }
            #expect(error == "connection refused" && downFor == nil)
            return sum + n
        }
        #expect(counted <= attempts && counted > attempts - 20)
        #expect(health.failures == attempts)
        #expect(health.lastError == "connection refused")
        #expect(health.secondsSinceUp(at: at(now)) == nil)

        // Recovery is logged (the streak was), with the whole streak's attempts; the period starts again.
        #expect(health.up(at: at(now)) == .reconnected(downFor: .milliseconds(now), attempts: attempts))
        #expect(health.secondsSinceUp(at: at(now + 500)) == 0)
        #expect(health.failed("connection refused", at: at(now + 8_010)) != nil)
    }

    @Test func aDropIsLoggedWithTheTimeSinceTheLinkWasUp() {
        var health = PeerLinkHealth(firstLogPeriod: .seconds(2))
        #expect(health.up(at: at(0)) == nil)  // a first connect after no trouble says nothing
        #expect(health.dropped("the connection closed", at: at(10_000)) == .dropped(error: "the connection closed"))
        #expect(health.secondsSinceUp(at: at(12_000)) == 2)
        // Retries right after the drop are inside the period: counted, not logged.
        #expect(health.failed("connection refused", at: at(10_050)) == nil)
        #expect(health.failed("connection refused", at: at(10_150)) == nil)
        let next = health.failed("connection refused", at: at(12_100))
        #expect(next == .unreachable(error: "connection refused", attempts: 3, downFor: .milliseconds(2100)))
        #expect(health.secondsSinceError(at: at(13_100)) == 1)
    }

    @Test func aFlappingLinkIsHeldToThePeriodToo() {
        var health = PeerLinkHealth(firstLogPeriod: .seconds(2))
        var lines = 0
        for i in 0..<100 {  // up and down every 20 ms for 2 s
            _ = health.up(at: at(Int64(i) * 20))
            if health.dropped("the connection closed", at: at(Int64(i) * 20 + 10)) != nil { lines += 1 }
        }
        #expect((1...2).contains(lines), "a drop logged at most once per period: \(lines)")
    }
}
