import Foundation
import Testing
@testable import ParleySimulation

/// The seeded simulator against the real ParleyRaft core (DESIGN invariants 1, 2 and 4: acknowledged
/// writes survive crashes and partitions, replicas apply the same entries, reads are never stale).
@Suite("Simulation")
struct SimulationTests {
    static let seeds: ClosedRange<UInt64> = 1...500

    @Test("DESIGN inv 1, 2, 4: seeds 1...500 keep safety, liveness and linearizability under faults")
    func fiveHundredSeeds() async {
        // Some 40 s of CPU, on a thread of its own: run on one of the test runner's few shared threads (two on
        // a 2-core machine), it starved the other suites' servers of time to start.
        let (totals, failures) = await withCheckedContinuation { done in
            Thread { done.resume(returning: Self.runSeeds()) }.start()
        }
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
        #expect(failures.isEmpty)
        // The faults really happened: a run that exercised nothing would prove nothing.
        #expect(totals.crashes > 100)
        #expect(totals.tornCrashes > 50)
        #expect(totals.partitions > 100)
        #expect(totals.messagesDropped > 1_000)
        #expect(totals.snapshotsReceived > 50)
        #expect(totals.configurationsApplied > 100)
        #expect(totals.transfers > 50)
        // Issue 17: half the seeds move the group as the cluster's planner does (ReplicaMoves), under the same faults.
        #expect(totals.plannedSteps > 300)
        #expect(totals.plannedTargetsReached > 100)
        #expect(totals.operationsCompleted > 10_000)
        #expect(totals.operationsUnknown > 100)
        // Issue 35: half the seeds defer commit notices; their leaders had to send some (no append came in time).
        #expect(totals.commitNotices > 1_000)
    }

    private static func runSeeds() -> (SimulationStatistics, [String]) {
        var totals = SimulationStatistics()
        var failures: [String] = []
        let config = SimulationConfig()
        for seed in seeds {
            let report = Simulation(seed: seed, config: config).run()
            totals.add(report.statistics)
            if let violation = report.violation {
                failures.append("seed \(seed): \(violation)\n  reproduce: "
                    + Simulation.reproduceCommand(seed: seed, nodes: config.nodes, steps: config.steps))
            }
        }
        return (totals, failures)
    }

    @Test("DESIGN inv 1: a host that sent acknowledgements and votes before its sync would be caught (the leader's appends may go early)")
    func earlyAcknowledgementsAreCaught() async {
        var config = SimulationConfig()
        #expect(config.sentBeforeSync == [.append, .heartbeat, .snapshot, .propose])
        config.sentBeforeSync.formUnion([.appendResponse, .voteResponse])
        config.steps = 4_000
        // Seed 269 shows it at once (since session 28; 806 did before the core changed); others show it as
        // replicas that never converge. It is tried first so the test stays short; should the core or the
        // simulator change, the search goes on through 300 seeds (about a minute of CPU), on a thread of its
        // own, not one of the test runner's two shared ones.
        let seeds: [UInt64] = [269, 806] + Array(1...300)
        let unsafe = config
        let caught = await withCheckedContinuation { (done: CheckedContinuation<InvariantViolation?, Never>) in
            Thread { done.resume(returning: seeds.lazy.compactMap { Simulation(seed: $0, config: unsafe).run().violation }.first) }
                .start()
        }
        #expect(caught != nil, "an unsafe host went unnoticed over 300 seeds")
    }

    @Test("DESIGN inv 2: a seed fully determines the run")
    func deterministic() {
        var config = SimulationConfig()
        config.trace = true
        config.nodes = 5
        let first = Simulation(seed: 4711, config: config).run()
        let second = Simulation(seed: 4711, config: config).run()
        #expect(first.trace == second.trace)
        #expect(first.statistics == second.statistics)
        #expect(first.virtualTime == second.virtualTime)
        #expect(first.trace.count > 100)
        let other = Simulation(seed: 4712, config: config).run()
        #expect(other.trace != first.trace)
    }

    @Test("the reproduce command names the seed and only non-default settings")
    func reproduceCommand() {
        #expect(Simulation.reproduceCommand(seed: 42, nodes: 3, steps: nil) == "swift run parley simulate --seed 42")
        #expect(Simulation.reproduceCommand(seed: 7, nodes: 5, steps: 900)
            == "swift run parley simulate --seed 7 --nodes 5 --steps 900")
    }
}
