import Testing
@testable import ParleyNode

/// Issue 15: a node whose shard replicas cannot elect for a few election timeouts warns, then repeats
/// the warning only now and then, and says when it is over.
@Suite struct ElectionWatchTests {
    let t0 = ContinuousClock.now

    @Test func warnsOncePastThePatienceRepeatsRarelyAndSaysWhenItIsOver() {
        var watch = ElectionWatch(patience: .seconds(5), repeatEvery: .seconds(30))
        var findings: [(Int, ElectionWatch.Finding)] = []
        for second in 0..<70 {
            let leaderless: Set<Int> = second < 65 ? [1, 2, 3] : []
            if let f = watch.observe(leaderless: leaderless, hosted: 16, at: t0 + .seconds(second)) {
                findings.append((second, f))
            }
        }
        #expect(findings.map(\.0) == [5, 35, 65])
        #expect(findings[0].1 == .stuck(shards: 3, of: 16, for: .seconds(5)))
        #expect(findings[1].1 == .stuck(shards: 3, of: 16, for: .seconds(35)))
        #expect(findings[2].1 == .recovered(after: .seconds(65)))
    }

    @Test func aBriefElectionIsNotReportedAndEachShardHasItsOwnClock() {
        var watch = ElectionWatch(patience: .seconds(5))
        // Shard 1 without a leader for 4 s, then shard 2 for 4 s: never 5 s for one shard.
        for second in 0..<8 {
            let leaderless: Set<Int> = second < 4 ? [1] : [2]
            #expect(watch.observe(leaderless: leaderless, hosted: 16, at: t0 + .seconds(second)) == nil)
        }
        #expect(watch.observe(leaderless: [], hosted: 16, at: t0 + .seconds(9)) == nil, "nothing was warned of")
    }
}
