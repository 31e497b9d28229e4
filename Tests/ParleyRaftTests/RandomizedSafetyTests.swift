import Testing
@testable import ParleyRaft

/// A small randomized check (the full simulator lives in ParleySimulation): random partitions, message
/// loss, restarts, compaction, membership changes and transfers, checking election safety and
/// state-machine safety after every tick, and progress once healed.
@Suite struct RandomizedSafetyTests {
    @Test("DESIGN-I1 DESIGN-I2: no two leaders in a term and no divergent applied entries under faults",
          arguments: UInt64(1)...12)
    func safetyUnderFaults(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let net = try TestNetwork(voters: [1, 2, 3, 4, 5]) {
            $0.randomSeed = seed
            $0.snapshotChunkBytes = 32
            $0.maxSizePerMessage = 256
        }
        try run(net, steps: 400, proposeEvery: 2, &rng) { net, rng, step in
            switch rng.next(upperBound: 20) {
            case 0: net.isolate(NodeID(rng.next(upperBound: 5) + 1))
            case 1, 2: net.heal()
            case 3:
                let loss = rng.next(upperBound: 30)
                var local = SplitMix64(seed: seed &+ UInt64(step))
                net.dropIf = { _ in local.next(upperBound: 100) < loss }
            case 4: try net.restart(NodeID(rng.next(upperBound: 5) + 1))
            case 5:
                let id = NodeID(rng.next(upperBound: 5) + 1)
                if net.appliedIndex[id]! > (try net.storages[id]!.snapshot().metadata.index) { try net.compact(id) }
            default: break
            }
        }
    }

    @Test("DESIGN-I1 DESIGN-I2: safety holds through membership changes and leadership transfers under faults",
          arguments: UInt64(101)...108)
    func safetyWithMembershipChanges(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let net = try TestNetwork(voters: [1, 2, 3, 4, 5]) { $0.randomSeed = seed }
        try run(net, steps: 300, proposeEvery: 1, &rng) { net, rng, _ in
            switch rng.next(upperBound: 12) {
            case 0: net.isolate(NodeID(rng.next(upperBound: 5) + 1))
            case 1, 2: net.heal()
            case 3:
                if let leader = net.leader() { net.node(leader).transferLeadership(to: NodeID(rng.next(upperBound: 5) + 1)) }
            case 4, 5:
                if let leader = net.leader() { try? net.node(leader).proposeConfChange(randomChange(net, leader, &rng)) }
            default: break
            }
        }
    }

    @Test("DESIGN-I1 DESIGN-I2: quiescing groups stay safe and live through faults, with lease reads on",
          arguments: UInt64(201)...206)
    func safetyWithQuiescence(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let net = try TestNetwork(voters: [1, 2, 3]) {
            $0.randomSeed = seed
            $0.quiesceAfterTicks = 3
            $0.readOnlyOption = .leaseBased
        }
        try run(net, steps: 400, proposeEvery: 8, &rng) { net, rng, _ in
            let id = NodeID(rng.next(upperBound: 3) + 1)
            switch rng.next(upperBound: 30) {
            case 0: net.isolate(id)
            case 1, 2: net.heal()
            case 3: try net.restart(id)
            // The host's transport notices a dead peer, or a client request reaches a node.
            case 4: net.node(id).reportUnreachable(NodeID(rng.next(upperBound: 3) + 1))
            case 5: net.node(id).readIndex(payload(rng.next(upperBound: 1 << 30)))
            // …or a peer it lost is reachable again (a leaderless replica campaigns at once).
            case 6: net.node(id).reportReachable(NodeID(rng.next(upperBound: 3) + 1))
            default: break
            }
        }
    }

    /// Runs `steps` ticks with a fault `event` before each, proposing on the leader; checks safety after
    /// every tick, then heals and requires every member to apply a final proposal.
    func run(_ net: TestNetwork, steps: Int, proposeEvery: Int, _ rng: inout SplitMix64,
             event: (TestNetwork, inout SplitMix64, Int) throws -> Void) throws {
        var leaders: [Term: NodeID] = [:]
        var next = 0
        for step in 0..<steps {
            try event(net, &rng, step)
            if let leader = net.leader(), rng.next(upperBound: proposeEvery) == 0 {
                try? net.node(leader).propose(payload(next))
                next += 1
            }
            net.tickAll()
            for id in net.ids where net.role(id) == .leader {
                let term = net.term(id)
                #expect(leaders[term, default: id] == id, "two leaders in term \(term)")
                leaders[term] = id
            }
            try checkAppliedAgree(net)
        }
        net.heal()
        net.tickAll(80)
        let leader = try #require(net.leader())
        try net.node(leader).propose(payload(999_999))
        net.tickAll(10)
        for id in net.node(leader).status.confState.allMembers { #expect(net.applied[id]!.last == payload(999_999)) }
        try checkAppliedAgree(net)
    }

    /// A change that keeps at least three voters: remove a voter, add a non-member as learner, or
    /// promote a learner (sometimes through an explicit joint configuration, left later).
    func randomChange(_ net: TestNetwork, _ leader: NodeID, _ rng: inout SplitMix64) -> ConfChange {
        let cs = net.node(leader).status.confState
        if cs.isJoint { return .leaveJoint }
        let outside = net.ids.filter { !cs.allMembers.contains($0) }
        var options: [ConfChangeSingle] = []
        if cs.voters.count > 3 { options += cs.voters.map { ConfChangeSingle(type: .removeNode, node: $0) } }
        options += outside.map { ConfChangeSingle(type: .addLearner, node: $0) }
        options += cs.learners.map { ConfChangeSingle(type: .addVoter, node: $0) }
        guard !options.isEmpty else { return .leaveJoint }
        let pick = options[rng.next(upperBound: options.count)]
        return ConfChange(transition: rng.next(upperBound: 2) == 0 ? .auto : .jointExplicit, changes: [pick])
    }

    /// Every node's applied sequence is a prefix of the longest one.
    func checkAppliedAgree(_ net: TestNetwork) throws {
        let longest = net.ids.map { net.applied[$0]! }.max { $0.count < $1.count }!
        for id in net.ids {
            let mine = net.applied[id]!
            #expect(Array(longest.prefix(mine.count)) == mine, "node \(id) applied a different sequence")
        }
    }
}
