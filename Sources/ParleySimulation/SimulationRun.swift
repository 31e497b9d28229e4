import HeapModule
import ParleyRaft

/// The state of one run: virtual clock, event queue, network, nodes and their disks, clients, checks.
/// Single-threaded; every random choice comes from `random`, and nothing iterates a Dictionary or Set
/// in an order that could matter (ids are sorted first).
final class SimulationRun {
    let seed: UInt64
    let config: SimulationConfig
    var random: SimulationRandom
    var now: UInt64 = 0
    private var queue = Heap<ScheduledEvent>()
    private var scheduled: UInt64 = 0
    var monitor = SafetyMonitor()
    var statistics = SimulationStatistics()
    var trace: [String] = []
    var steps = 0

    /// Every id the run may use: founding voters, then spares.
    let allIDs: [NodeID]
    var nodes: [NodeID: SimulatedNode] = [:]
    /// Disks of crashed nodes, waiting for their restart.
    var downDisks: [NodeID: SimulatedDisk] = [:]
    var incarnation: [NodeID: Int] = [:]
    private var tickPeriod: [NodeID: UInt64] = [:]
    var retired: Set<NodeID> = []
    /// Nodes named by some applied configuration so far.
    var everMember: Set<NodeID>
    private var latestConfIndex: LogIndex = 0
    /// Members of the configuration applied at `latestConfIndex`, sorted.
    private var latestMembers: [NodeID]
    private var roles: [NodeID: Role] = [:]
    /// Nodes that crash during their next Ready, after writing and before syncing.
    var tornCrashPending: Set<NodeID> = []
    var blocked: Set<Link> = []
    var faultsActive = true

    /// Planned-moves runs (`SimulationConfig.plannedMoves`): the voters the planner moves the group toward.
    let plannedMoves: Bool
    /// Virtual ms after which a leader sends the commit index no append carried (nil: it sends it at once,
    /// etcd's rule); seeds whose second bit is set defer (`SimulationConfig.deferredCommitNotices`).
    let commitNoticeDelay: UInt64?
    /// Leaders with a `commitNotice` event due.
    private var noticeDue: Set<NodeID> = []
    var moveTarget: [NodeID] = []
    /// Planner steps taken when `moveTarget` was set (a target counts as reached only if it took steps).
    var stepsAtTarget = 0

    var clients: [SimulatedClient]
    var history: [ClientOperation] = []
    var workloadActive = true
    var nextValue = 1
    var finalWriteDone = false

    init(seed: UInt64, config: SimulationConfig) {
        self.seed = seed
        var random = SimulationRandom(seed: seed)
        var chosen = config
        if config.swarm { chosen.vary(using: &random) }
        self.config = chosen
        self.random = random
        allIDs = (1...NodeID(config.nodes + config.spareNodes)).map { $0 }
        everMember = Set(allIDs.prefix(config.nodes))
        latestMembers = Array(allIDs.prefix(config.nodes))
        plannedMoves = config.plannedMoves ?? (seed % 2 == 0)
        commitNoticeDelay = (config.deferredCommitNotices ?? ((seed / 2) % 2 == 1)) ? 1 + (seed / 4) % 10 : nil
        // The last client writes the quiet period's final value.
        clients = (0...config.clients).map { SimulatedClient(id: $0) }
        note("seed \(seed): \(chosen.nodes) nodes; \(chosen.knobs); commit notices "
            + (commitNoticeDelay.map { "after \($0) ms" } ?? "at once"))
    }

    /// Ids of running nodes, sorted.
    var runningIDs: [NodeID] { nodes.keys.sorted() }

    func note(_ line: @autoclosure () -> String) {
        if config.trace { trace.append("[\(now)] " + line()) }
    }

    func schedule(after delay: UInt64, _ kind: ScheduledEvent.Kind) {
        scheduled += 1
        queue.insert(ScheduledEvent(time: now + delay, order: scheduled, kind: kind))
    }

    func run() -> SimulationReport {
        var violation: InvariantViolation?
        var verdict: LinearizabilityVerdict?
        do {
            try bootstrap()
            try faultPhase()
            try quietPeriod()
        } catch let broken as InvariantViolation {
            violation = broken
        } catch {
            violation = InvariantViolation("unexpected error", "\(error)")
        }
        if violation == nil {
            closeOutstandingOperations()
            let result = LinearizabilityChecker(maxStepsPerKey: config.checkerSteps).check(history)
            verdict = result
            if case .violation = result { violation = InvariantViolation("linearizability", result.explanation) }
        }
        if let violation { note("VIOLATION \(violation)") }
        statistics.leadersElected = monitor.leadersElected
        return SimulationReport(seed: seed, violation: violation, linearizability: verdict, steps: steps,
                                virtualTime: now, statistics: statistics, trace: trace)
    }

    private func bootstrap() throws {
        let founders = Array(allIDs.prefix(config.nodes))
        let founding = Snapshot(metadata: SnapshotMetadata(index: 1, term: 1, confState: ConfState(voters: founders)),
                                data: RegisterStateMachine().encoded())
        for id in founders {
            try start(id, disk: SimulatedDisk(bootstrap: founding, hardState: HardState(term: 1, vote: 0, commit: 1)))
        }
        for client in 0..<config.clients { schedule(after: UInt64(random.within(1...50)), .client(client)) }
        schedule(after: UInt64(random.within(config.faultInterval)), .fault)
    }

    private func faultPhase() throws {
        while steps < config.steps, let event = queue.popMin() {
            now = event.time
            steps += 1
            try handle(event)
        }
    }

    /// Heal everything, restart every crashed node, stop faults and new work; then a leader must be
    /// elected and a final write committed within `livenessBound`.
    private func quietPeriod() throws {
        faultsActive = false
        workloadActive = false
        try healAll()
        tornCrashPending.removeAll()
        note("quiet period: healed, restarting \(downDisks.keys.sorted())")
        for id in downDisks.keys.sorted() { try restart(id) }
        let start = now
        schedule(after: 0, .finalProbe)
        try run(until: { self.finalWriteDone }, deadline: start + UInt64(config.livenessBound))
        guard finalWriteDone else {
            throw InvariantViolation("liveness", "no leader committed the final write within "
                + "\(config.livenessBound) ms of healing; nodes: \(clusterSummary)")
        }
        note("quiet period: final write committed after \(now - start) ms")
        // Every member then catches up to it (by log or snapshot), so no replica is left behind for good.
        let target = runningIDs.compactMap { nodes[$0]?.applied }.max() ?? 0
        // Members of the latest configuration (a change proposed earlier may still commit meanwhile).
        let members = { self.latestMembers.filter { !self.retired.contains($0) } }
        let caughtUp = { members().allSatisfy { (self.nodes[$0]?.applied ?? 0) >= target } }
        try run(until: caughtUp, deadline: now + UInt64(config.livenessBound))
        guard caughtUp() else {
            throw InvariantViolation("convergence", "members \(members()) did not all apply index \(target) within "
                + "\(config.livenessBound) ms of the final write; nodes: \(clusterSummary)")
        }
        note("quiet period: members \(members()) applied \(target)")
    }

    /// Handles events until `done` holds or the next event is due after `deadline`.
    private func run(until done: () -> Bool, deadline: UInt64) throws {
        while !done(), let event = queue.popMin() {
            guard event.time <= deadline else { break }
            now = event.time
            steps += 1
            try handle(event)
        }
    }

    private func handle(_ event: ScheduledEvent) throws {
        switch event.kind {
        case .tick(let id, let generation):
            guard let node = nodes[id], incarnation[id] == generation else { return }
            node.raw.tick()
            // The host wakes quiet groups now and then, so a dead quiet leader is noticed (docs/raft.md).
            if config.quiesceAfterTicks != nil, random.chance(0.02) { node.raw.wake() }
            try drain(id)
            // Background flush of writes that did not need an fsync (commit-index-only hard states).
            if random.chance(0.3) { nodes[id]?.disk.sync() }
            if nodes[id] != nil { schedule(after: tickPeriod[id]!, .tick(id, incarnation: generation)) }
        case .deliver(let message):
            try deliver(message)
        case .client(let client):
            try wake(client)
        case .fault:
            guard faultsActive else { return }
            try injectFault()
            schedule(after: UInt64(random.within(config.faultInterval)), .fault)
        case .restart(let id):
            if downDisks[id] != nil { try restart(id) }
        case .crash(let id, let generation):
            if faultsActive, incarnation[id] == generation, nodes[id] != nil { crash(id, torn: false) }
        case .finalProbe:
            try probeFinalWrite()
        case .commitNotice(let id, let generation):
            guard incarnation[id] == generation else { return }
            noticeDue.remove(id)
            guard let node = nodes[id], node.raw.unsentCommit != nil else { return }
            statistics.commitNotices += 1
            node.raw.sendCommit()
            try drain(id)
        }
    }

    // MARK: nodes

    /// Starts an incarnation of `id` from `disk`.
    func start(_ id: NodeID, disk: SimulatedDisk) throws {
        let generation = (incarnation[id] ?? 0) + 1
        incarnation[id] = generation
        var config = RaftConfig(id: id, electionTick: self.config.electionTick,
                                heartbeatTick: self.config.heartbeatTick, preVote: self.config.preVote,
                                checkQuorum: self.config.checkQuorum, maxSizePerMessage: self.config.maxSizePerMessage,
                                maxInflightMessages: self.config.maxInflightMessages,
                                readOnlyOption: self.config.readOnlyOption,
                                quiesceAfterTicks: self.config.quiesceAfterTicks,
                                snapshotChunkBytes: self.config.snapshotChunkBytes, randomSeed: random.next())
        config.leaseDriftMarginTicks = self.config.leaseDriftMarginTicks
        config.forwardProposals = self.config.forwardProposals
        config.deferCommitNotice = commitNoticeDelay != nil
        noticeDue.remove(id)
        let node = try SimulatedNode(id: id, disk: disk, config: config)
        nodes[id] = node
        roles[id] = .follower
        let base = self.config.tickInterval
        let drift = random.within(-base / 5...base / 5)
        tickPeriod[id] = UInt64(max(1, base + drift))
        schedule(after: UInt64(random.within(1...base)), .tick(id, incarnation: generation))
        note("n\(id) started (incarnation \(generation), term \(node.term), commit \(node.commit), "
            + "applied \(node.applied))")
    }

    func restart(_ id: NodeID) throws {
        guard !retired.contains(id), let disk = downDisks.removeValue(forKey: id) else { return }
        statistics.restarts += 1
        try start(id, disk: disk)
    }

    /// Loses the node's memory and whatever unsynced writes do not happen to reach the disk.
    func crash(_ id: NodeID, torn: Bool) {
        guard let node = nodes.removeValue(forKey: id) else { return }
        var disk = node.disk
        let survivors = random.within(0...disk.unsynced.count)
        note("n\(id) CRASH\(torn ? " mid-Ready" : "") (\(survivors) of \(disk.unsynced.count) unsynced writes survive)")
        disk.crash(survivors: survivors)
        downDisks[id] = disk
        tornCrashPending.remove(id)
        statistics.crashes += 1
        if torn { statistics.tornCrashes += 1 }
        schedule(after: UInt64(random.within(config.downtime)), .restart(id))
    }

    /// A node removed from the configuration stops for good.
    private func retire(_ id: NodeID) {
        note("n\(id) retired (removed from the configuration)")
        retired.insert(id)
        nodes.removeValue(forKey: id)
        downDisks.removeValue(forKey: id)
        tornCrashPending.remove(id)
    }

    /// Handles the node's pending Ready batches and everything they produce.
    func drain(_ id: NodeID) throws {
        guard let node = nodes[id] else { return }
        let outcome = try node.drainReady(monitor: &monitor, tornCrash: tornCrashPending.contains(id),
                                          snapshotEvery: config.snapshotEvery, sentBeforeSync: config.sentBeforeSync)
        if outcome.crashed {
            // What left before the crash still arrives: earlier Readies' messages and the torn one's
            // leader appends (`MessageKind.mayLeaveBeforeSync`).
            for message in outcome.messages { send(message) }
            for answer in outcome.answers { answered(answer, by: id) }
            crash(id, torn: true)
            return
        }
        if roles[id] != node.role {
            note("n\(id) is \(node.role) in term \(node.term)")
            roles[id] = node.role
            // Leaders that die young leave old-term entries half replicated: where the commit rule
            // (Figure 8) and leader completeness are tested hardest.
            if node.isLeader, faultsActive, config.crashes, downDisks.count < max(1, (config.nodes - 1) / 2),
               random.chance(config.youngLeaderCrashRate) {
                schedule(after: UInt64(random.within(1...15)), .crash(id, incarnation: incarnation[id]!))
            }
        }
        statistics.snapshotsTaken += outcome.snapshotsTaken
        statistics.snapshotsReceived += outcome.snapshotsReceived
        for message in outcome.messages { send(message) }
        for answer in outcome.answers { answered(answer, by: id) }
        if let delay = commitNoticeDelay, node.raw.unsentCommit != nil, noticeDue.insert(id).inserted {
            schedule(after: delay, .commitNotice(id, incarnation: incarnation[id]!))
        }
        for (index, conf) in outcome.configurations {
            statistics.configurationsApplied += 1
            guard index > latestConfIndex else { continue }
            latestConfIndex = index
            note("configuration at \(index): voters \(conf.voters) outgoing \(conf.votersOutgoing) "
                + "learners \(conf.learners) next \(conf.learnersNext)\(conf.autoLeave ? " autoLeave" : "")")
            latestMembers = conf.allMembers.sorted()
            let members = Set(conf.allMembers)
            everMember.formUnion(members)
            for member in everMember.sorted() where !members.contains(member) && !retired.contains(member) {
                retire(member)
            }
        }
    }

    // MARK: network

    private func send(_ message: Message) {
        statistics.messagesSent += 1
        if faultsActive, random.chance(config.dropRate) {
            statistics.messagesDropped += 1
            return
        }
        schedule(after: delay(), .deliver(message))
        if faultsActive, random.chance(config.duplicateRate) {
            statistics.messagesDuplicated += 1
            schedule(after: delay(), .deliver(message))
        }
    }

    private func delay() -> UInt64 {
        let long = faultsActive && random.chance(config.longDelayRate)
        return UInt64(random.within(long ? config.longDelay : config.messageDelay))
    }

    private func deliver(_ message: Message) throws {
        guard let target = nodes[message.to], !blocked.contains(Link(from: message.from, to: message.to)) else {
            statistics.messagesDropped += 1
            // The transport notices a failed connection and tells the sender, as etcd's does.
            if let sender = nodes[message.from] {
                sender.raw.reportUnreachable(message.to)
                if message.kind == .snapshot { sender.raw.reportSnapshot(message.to, success: false) }
                try drain(message.from)
            }
            return
        }
        if config.traceMessages {
            note("n\(message.from)→n\(message.to) \(message.kind) term \(message.term) index \(message.index) "
                + "logTerm \(message.logTerm) entries \(message.entries.count) commit \(message.commit)"
                + (message.reject ? " reject hint \(message.rejectHint)" : "")
                + (message.snapshot.map { " snapshot@\($0.metadata.index) offset \(message.snapshotOffset)/\(message.snapshotTotalBytes)" } ?? ""))
        }
        do {
            try target.raw.step(message)
        } catch {
            note("n\(message.to) rejected \(message.kind) from n\(message.from): \(error)")
        }
        try drain(message.to)
    }

    // MARK: cluster view

    /// One line per running node: role, term, commit, applied, log bounds, configuration.
    var clusterSummary: String {
        runningIDs.map { id in
            let node = nodes[id]!
            let status = node.raw.status
            return "n\(id) \(node.role) term \(node.term) commit \(node.commit) applied \(node.applied) "
                + "log \(status.firstIndex)...\(status.lastIndex) voters \(node.confState.voters)"
                + (node.confState.votersOutgoing.isEmpty ? "" : " outgoing \(node.confState.votersOutgoing)")
                + (node.confState.learners.isEmpty ? "" : " learners \(node.confState.learners)")
        }.joined(separator: "; ")
    }

    /// The running leader with the highest term, if any.
    var leader: SimulatedNode? {
        runningIDs.compactMap { nodes[$0] }.filter(\.isLeader).max { $0.term < $1.term }
    }
}
