import ParleyRaft

/// The nemesis: partitions that come and go, crashes, membership changes and leadership transfers.
extension SimulationRun {
    private enum Fault: CaseIterable {
        case split, isolateLeader, oneWay, heal, crash, crashLeader, membership, transfer
    }

    func injectFault() throws {
        var choices: [Fault] = []
        if config.partitions { choices += [.split, .isolateLeader, .oneWay, .heal, .heal, .heal] }
        if config.crashes { choices += [.crash, .crash, .crashLeader] }
        if config.membershipChanges { choices += [.membership, .membership, .membership] }
        if config.leadershipTransfers { choices += [.transfer] }
        guard !choices.isEmpty else { return }
        switch random.pick(choices) {
        case .split: split()
        case .isolateLeader: isolateLeader()
        case .oneWay: cutOneWay()
        case .heal:
            if !blocked.isEmpty { note("heal all links") }
            try healAll()
        case .crash: crashSomeone()
        case .crashLeader: crashSomeone(leaderOnly: true)
        case .membership: try changeMembership()
        case .transfer: try transferLeadership()
        }
    }

    /// Restores every cut link. Each running node whose link to a peer comes back is told the peer is
    /// reachable, as the real transport does when a connection is accepted again (in a fixed order: the
    /// run stays a function of its seed).
    func healAll() throws {
        let healed = blocked.sorted { ($0.from, $0.to) < ($1.from, $1.to) }
        blocked.removeAll()
        for link in healed {
            guard let node = nodes[link.from] else { continue }
            node.raw.reportReachable(link.to)
            try drain(link.from)
        }
    }

    /// Nodes that exist (running or down), sorted.
    private var liveIDs: [NodeID] { (Array(nodes.keys) + Array(downDisks.keys)).sorted() }

    private func split() {
        var ids = liveIDs
        guard ids.count >= 2 else { return }
        // Fisher–Yates with the run's generator.
        for index in stride(from: ids.count - 1, to: 0, by: -1) { ids.swapAt(index, random.below(index + 1)) }
        let cut = random.within(1...ids.count - 1)
        let (left, right) = (Array(ids[..<cut]).sorted(), Array(ids[cut...]).sorted())
        for a in left {
            for b in right {
                blocked.insert(Link(from: a, to: b))
                blocked.insert(Link(from: b, to: a))
            }
        }
        statistics.partitions += 1
        note("partition \(left) | \(right)")
    }

    private func isolateLeader() {
        guard let leader else { return }
        for other in liveIDs where other != leader.id {
            blocked.insert(Link(from: leader.id, to: other))
            blocked.insert(Link(from: other, to: leader.id))
        }
        statistics.partitions += 1
        note("isolate leader n\(leader.id)")
    }

    /// Asymmetric faults: one direction of a link fails (often the leader's outgoing side).
    private func cutOneWay() {
        let ids = liveIDs
        guard ids.count >= 2 else { return }
        let from = (random.chance(0.5) ? leader?.id : nil) ?? random.pick(ids)
        let targets = random.chance(0.5) ? ids.filter { $0 != from } : [random.pick(ids.filter { $0 != from })]
        for to in targets { blocked.insert(Link(from: from, to: to)) }
        statistics.partitions += 1
        note("cut one way n\(from) → \(targets)")
    }

    /// Crashes a node (or the leader: a leader dying while its log is half replicated is where commit
    /// rules matter most).
    private func crashSomeone(leaderOnly: Bool = false) {
        let candidates = leaderOnly ? [leader?.id].compactMap { $0 } : runningIDs.filter { !tornCrashPending.contains($0) }
        let allowedDown = max(1, (config.nodes - 1) / 2)
        guard !candidates.isEmpty, downDisks.count + tornCrashPending.count < allowedDown else { return }
        let victim = random.pick(candidates)
        if random.chance(0.5) {
            note("n\(victim) will crash during its next Ready")
            tornCrashPending.insert(victim)
        } else {
            crash(victim, torn: false)
        }
    }

    private func transferLeadership() throws {
        guard let leader else { return }
        let targets = leader.confState.voters.filter { $0 != leader.id }
        guard !targets.isEmpty else { return }
        let target = random.pick(targets)
        statistics.transfers += 1
        note("transfer leadership n\(leader.id) → n\(target)")
        leader.raw.transferLeadership(to: target)
        try drain(leader.id)
    }

    /// Proposes one configuration change through the leader: add a learner (a fresh node with empty
    /// storage), promote it, remove a voter or learner, replace a voter through a joint configuration,
    /// or leave a joint configuration.
    private func changeMembership() throws {
        if plannedMoves { return try moveTowardTarget() }
        guard let leader else { return }
        let conf = leader.confState
        var options: [ConfChange] = []
        if conf.isJoint {
            guard !conf.autoLeave else { return }
            options.append(.leaveJoint)
        } else {
            let spare = allIDs.first { !everMember.contains($0) && !retired.contains($0) }
            if let spare { options.append(ConfChange(changes: [ConfChangeSingle(type: .addLearner, node: spare)])) }
            if let learner = conf.learners.first {
                options.append(ConfChange(changes: [ConfChangeSingle(type: .addVoter, node: learner)]))
                options.append(ConfChange(changes: [ConfChangeSingle(type: .removeNode, node: learner)]))
                let outgoing = random.pick(conf.voters)
                let transition = random.pick([ConfChangeTransition.auto, .jointImplicit, .jointExplicit])
                options.append(ConfChange(transition: transition, changes: [
                    ConfChangeSingle(type: .addVoter, node: learner),
                    ConfChangeSingle(type: .removeNode, node: outgoing),
                ]))
            }
            if conf.voters.count > config.nodes {
                options.append(ConfChange(changes: [ConfChangeSingle(type: .removeNode, node: random.pick(conf.voters))]))
            }
        }
        guard !options.isEmpty else { return }
        let change = random.pick(options)
        try propose(change, at: leader)
    }

    /// Proposes a configuration change through `leader`; nodes it adds start with empty storage.
    private func propose(_ change: ConfChange, at leader: SimulatedNode) throws {
        for single in change.changes where single.type != .removeNode && nodes[single.node] == nil
            && downDisks[single.node] == nil {
            try start(single.node, disk: SimulatedDisk(bootstrap: nil, hardState: HardState()))
        }
        statistics.membershipProposals += 1
        note("propose conf change \(change.transition) \(change.changes.map { "\($0.type) n\($0.node)" }) at n\(leader.id)")
        do {
            try leader.raw.proposeConfChange(change)
        } catch {
            statistics.proposalsRejected += 1
            note("conf change rejected: \(error)")
        }
        try drain(leader.id)
    }

    /// One step of the cluster's planner (`ReplicaMoves.next`, as `RaftHost.moveReplicas` takes it) toward
    /// `moveTarget`. Once the group is there, a new target replaces one voter by a node that was never a
    /// member (ids are not reused). Nodes the step adds start empty and are filled by snapshot.
    private func moveTowardTarget() throws {
        guard let leader else { return }
        let conf = leader.confState
        if moveTarget.isEmpty {
            moveTarget = conf.voters
            stepsAtTarget = statistics.plannedSteps
        }
        let membership = ReplicaMoves.Membership(shard: 0, leader: leader.raw, conf: conf)
        var step = ReplicaMoves.next(leader: leader.id, membership: membership, target: moveTarget)
        if step == .none {
            // Counted once per target that took steps to reach.
            if statistics.plannedSteps > stepsAtTarget {
                statistics.plannedTargetsReached += 1
                stepsAtTarget = statistics.plannedSteps
            }
            guard let fresh = allIDs.first(where: { !everMember.contains($0) && !retired.contains($0)
                                                    && nodes[$0] == nil && downDisks[$0] == nil }) else { return }
            var next = moveTarget
            next[random.below(next.count)] = fresh
            moveTarget = next.sorted()
            stepsAtTarget = statistics.plannedSteps
            note("planner: new target \(moveTarget)")
            step = ReplicaMoves.next(leader: leader.id, membership: membership, target: moveTarget)
        }
        switch step {
        case .none, .wait:
            return
        case .transferLeadership(let heir):
            note("planner: transfer leadership n\(leader.id) → n\(heir)")
            statistics.plannedSteps += 1
            leader.raw.transferLeadership(to: heir)
        default:
            guard let change = step.change else { return }
            statistics.plannedSteps += 1
            note("planner: \(step)")
            try propose(change, at: leader)
            return
        }
        try drain(leader.id)
    }
}
