import ArgumentParser
import ParleyRaft

/// `parley bench raft`: committed proposals per second of a 3-node group in one process, with
/// MemoryStorage and messages passed in memory (no disk, no network): the cost of the Raft core itself.
struct BenchRaftCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "raft",
        abstract: "Committed proposals/s of an in-memory 3-node Raft group (64 B and 1 KiB, 1 and 256 proposers)."
    )

    @Option(help: "Runs per case; the median is printed.")
    var runs = 5

    @Option(help: "Seconds per run.")
    var seconds = 1.0

    func run() throws {
        print("raft: 3 nodes, MemoryStorage, in-memory messages; median of \(runs) runs of \(seconds) s")
        print("payload  proposers  committed/s   (runs)")
        for size in [64, 1024] {
            for proposers in [1, 256] {
                var rates: [Double] = []
                for run in 0..<runs {
                    let group = try BenchGroup(seed: UInt64(run + 1))
                    rates.append(try group.measure(payloadSize: size, proposers: proposers, seconds: seconds))
                }
                rates.sort()
                let median = rates[rates.count / 2]
                let all = rates.map { String(Int($0)) }.joined(separator: " ")
                print("\(pad("\(size) B", 7))  \(pad("\(proposers)", 9))  \(pad(String(Int(median)), 11))   (\(all))")
            }
        }
        print("idle groups (\(idleGroups) groups of 3 nodes, \(idleRounds) ticks each):")
        for quiesce in [false, true] {
            let ns = try idleTickCost(quiesce: quiesce)
            print("  \(quiesce ? "quiesced   " : "heartbeating") \(pad(String(Int(ns.rounded())), 6)) ns per group per tick")
        }
    }

    @Option(help: "Idle groups in the quiescence measurement.")
    var idleGroups = 1000

    private var idleRounds: Int { 200 }

    /// Cost of one tick (plus handling whatever it causes) of an idle group, with or without quiescence.
    private func idleTickCost(quiesce: Bool) throws -> Double {
        let groups = try (0..<idleGroups).map { try BenchGroup(seed: UInt64($0 + 1), quiesceAfterTicks: quiesce ? 5 : nil) }
        for group in groups { try group.tickAndCycle(rounds: 10) }
        if quiesce {
            guard groups.allSatisfy(\.isQuiesced) else { throw ValidationError("groups did not quiesce") }
        }
        let clock = ContinuousClock()
        let start = clock.now
        for group in groups { try group.tickAndCycle(rounds: idleRounds) }
        let elapsed = clock.now - start
        let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        return ns / Double(idleGroups * idleRounds)
    }

    private func pad(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }
}

/// Three RawNodes driven in lock-step: handle every Ready, deliver every message, repeat.
final class BenchGroup {
    private let ids: [NodeID] = [1, 2, 3]
    private var nodes: [RawNode] = []
    private var storages: [MemoryStorage] = []
    private var inbox: [[Message]] = [[], [], []]
    private var appliedSinceCompaction = [0, 0, 0]

    init(seed: UInt64, quiesceAfterTicks: Int? = nil) throws {
        for id in ids {
            var config = RaftConfig(id: id, randomSeed: seed)
            config.quiesceAfterTicks = quiesceAfterTicks
            config.maxSizePerMessage = 1 << 20
            config.maxInflightMessages = 256
            let storage = MemoryStorage(bootstrap: ConfState(voters: ids))
            storages.append(storage)
            nodes.append(try RawNode(config: config, storage: storage))
        }
        try nodes[0].campaign()
        for _ in 0..<10 { _ = try cycle() }
        guard nodes[0].status.softState.role == .leader else { throw ValidationError("no leader elected") }
    }

    var isQuiesced: Bool { nodes.allSatisfy { $0.status.isQuiesced } }

    /// Ticks every node and handles what follows, `rounds` times.
    func tickAndCycle(rounds: Int) throws {
        for _ in 0..<rounds {
            for node in nodes { node.tick() }
            while try cycleSettles() {}
        }
    }

    /// One cycle; true while there is still something to do.
    private func cycleSettles() throws -> Bool {
        _ = try cycle()
        return nodes.contains { $0.hasReady } || inbox.contains { !$0.isEmpty }
    }

    /// Runs with `proposers` outstanding proposals for `seconds`; returns committed proposals per second.
    func measure(payloadSize: Int, proposers: Int, seconds: Double) throws -> Double {
        let payload = [UInt8](repeating: 0x5A, count: payloadSize)
        let leader = nodes[0]
        for _ in 0..<proposers { try leader.propose(payload) }
        let clock = ContinuousClock()
        let start = clock.now
        let limit = Duration.milliseconds(Int(seconds * 1000))
        var committed = 0
        while clock.now - start < limit {
            // Re-issue one proposal per committed one, so `proposers` stay outstanding.
            for _ in 0..<32 {
                let done = try cycle()
                committed += done
                if done > 0 { try leader.propose(batch: Array(repeating: payload, count: done)) }
            }
        }
        let elapsed = clock.now - start
        let secondsElapsed = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(committed) / secondsElapsed
    }

    /// One round: every node handles its Ready, then every message is delivered. Returns how many
    /// proposals the leader applied.
    private func cycle() throws -> Int {
        var leaderApplied = 0
        for (i, node) in nodes.enumerated() where node.hasReady {
            let rd = node.ready()
            let storage = storages[i]
            if let snapshot = rd.snapshot { try storage.applySnapshot(snapshot) }
            try storage.append(rd.entries)
            if let hs = rd.hardState { storage.setHardState(hs) }
            for m in rd.messages { inbox[Int(m.to) - 1].append(m) }
            let applied = rd.committedEntries.reduce(0) { $0 + ($1.data.isEmpty ? 0 : 1) }
            if i == 0 { leaderApplied += applied }
            appliedSinceCompaction[i] += rd.committedEntries.count
            node.advance(rd)
            // Keep memory flat: drop applied entries now and then, as a real node would after a snapshot.
            if appliedSinceCompaction[i] > 100_000, let last = rd.committedEntries.last {
                try storage.compact(upTo: min(last.index, try storage.lastIndex()) - 1_000)
                appliedSinceCompaction[i] = 0
            }
        }
        for i in nodes.indices where !inbox[i].isEmpty {
            let batch = inbox[i]
            inbox[i].removeAll(keepingCapacity: true)
            for m in batch { try nodes[i].step(m) }
        }
        return leaderApplied
    }
}
