import ParleyRaft

/// One running incarnation of a node: a `RawNode` over storage it can see (including writes not yet
/// synced), its disk, and the key-value state machine it applies committed entries to.
/// Everything here is lost on a crash except `disk.durable` (and whatever prefix of unsynced writes survives).
final class SimulatedNode {
    /// An answer owed to a client connected to this node.
    struct Answer {
        var client: Int
        var request: UInt64
        var output: RegisterOutput
    }

    /// What one round of Ready handling produced for the rest of the simulation.
    struct Outcome {
        var messages: [Message] = []
        var answers: [Answer] = []
        /// Configurations this node applied, in order, with the log index they took effect at.
        var configurations: [(index: LogIndex, conf: ConfState)] = []
        var snapshotsTaken = 0
        var snapshotsReceived = 0
        /// A crash was injected between writing and syncing; the node must be discarded.
        var crashed = false
    }

    let id: NodeID
    let raw: RawNode
    let storage: MemoryStorage
    var disk: SimulatedDisk
    private(set) var stateMachine = RegisterStateMachine()
    private(set) var role: Role = .follower
    private(set) var leader: NodeID = 0
    private(set) var term: Term
    private(set) var commit: LogIndex
    private(set) var applied: LogIndex
    private(set) var confState: ConfState
    private var snapshotIndex: LogIndex
    /// ReadIndex requests asked of this node, waiting for their read state.
    private var readsAwaitingIndex: [(client: Int, request: UInt64, key: RegisterKey)] = []
    /// Reads with a known read index, waiting for `applied` to reach it.
    private var readsAwaitingApply: [(index: LogIndex, client: Int, request: UInt64, key: RegisterKey)] = []

    /// Starts (or restarts) a node from what its disk holds.
    init(id: NodeID, disk: SimulatedDisk, config: RaftConfig) throws {
        self.id = id
        self.disk = disk
        storage = try disk.recover()
        raw = try RawNode(config: config, storage: storage)
        let (hardState, confState) = try storage.initialState()
        term = hardState.term
        commit = hardState.commit
        self.confState = confState
        let snapshot = try storage.snapshot()
        snapshotIndex = snapshot.metadata.index
        applied = snapshot.metadata.index
        if !snapshot.data.isEmpty { stateMachine = try RegisterStateMachine(decoding: snapshot.data) }
    }

    var isLeader: Bool { role == .leader }

    /// Every node this one's configuration names, sorted.
    var members: [NodeID] {
        Array(Set(confState.voters + confState.votersOutgoing + confState.learners + confState.learnersNext)).sorted()
    }

    /// Asks for a linearizable read of `key` through ReadIndex.
    func read(client: Int, request: UInt64, key: RegisterKey) {
        readsAwaitingIndex.append((client, request, key))
        raw.readIndex(RegisterCommand.readContext(client: client, request: request))
    }

    /// Handles every pending Ready. `tornCrash` injects a crash after the first Ready's writes reach the
    /// page cache but before they are synced and before its messages leave.
    func drainReady(monitor: inout SafetyMonitor, tornCrash: Bool, snapshotEvery: Int,
                    sentBeforeSync: Set<MessageKind>) throws -> Outcome {
        var outcome = Outcome()
        while raw.hasReady {
            let ready = raw.ready()
            // As the node's host does: a leader's appends and heartbeats leave before the sync, so a torn
            // crash can lose on the leader what its followers already hold.
            outcome.messages += ready.messages.filter { sentBeforeSync.contains($0.kind) }
            // As the host does: committed entries this node held on disk before the Ready apply, and are
            // answered, before the Ready's writes (a torn crash below still delivers those answers).
            let hasSnapshot = (ready.snapshot?.metadata.index ?? 0) > 0
            let durableBefore = hasSnapshot ? 0 : try storage.lastIndex()
            try applyEntries(ready.committedEntries.prefix { $0.index <= durableBefore },
                             commit: ready.hardState?.commit ?? commit, term: ready.hardState?.term ?? term,
                             monitor: &monitor, outcome: &outcome)
            try persist(ready, monitor: &monitor)
            if tornCrash {
                outcome.crashed = true
                return outcome
            }
            // `mustSync` (as etcd's) does not cover a received snapshot, yet the node acknowledges it in
            // this Ready's messages: it must be durable first (seed 2735 showed the divergence otherwise).
            if ready.mustSync || ready.snapshot != nil { disk.sync() }
            outcome.messages += ready.messages.filter { !sentBeforeSync.contains($0.kind) }
            try apply(ready, monitor: &monitor, outcome: &outcome)
            raw.advance(ready)
            answerReads(&outcome)
            // ParleyRaft (like etcd) restores only snapshots whose configuration names the node, and a
            // group bootstrapped from a snapshot has no log before it: a node joining needs a snapshot
            // taken after its addition, so take one whenever the configuration outgrows the snapshot's.
            let snapshotMembers = try storage.snapshot().metadata.confState.allMembers
            let outgrown = !outcome.configurations.isEmpty && !Set(confState.allMembers).isSubset(of: snapshotMembers)
            if outgrown || (snapshotEvery > 0 && applied >= snapshotIndex + LogIndex(snapshotEvery)) {
                try takeSnapshot()
                outcome.snapshotsTaken += 1
            }
        }
        return outcome
    }

    private func persist(_ ready: Ready, monitor: inout SafetyMonitor) throws {
        let commitBefore = commit
        if let soft = ready.softState {
            role = soft.role
            leader = soft.leader
        }
        if let hardState = ready.hardState {
            guard hardState.commit >= commit else {
                throw InvariantViolation("monotonic commit", "node \(id) commit went from \(commit) to \(hardState.commit)")
            }
            guard hardState.term >= term else {
                throw InvariantViolation("monotonic term", "node \(id) term went from \(term) to \(hardState.term)")
            }
            term = hardState.term
            commit = hardState.commit
        }
        if let snapshot = ready.snapshot, snapshot.metadata.index > 0 {
            try storage.applySnapshot(snapshot)
            let hardState = ready.hardState ?? HardState(term: term, vote: raw.status.hardState.vote, commit: commit)
            disk.write(.snapshot(snapshot, hardState))
        }
        if !ready.entries.isEmpty {
            // A node never replaces an entry it already knows to be committed.
            for entry in ready.entries where entry.index <= commitBefore {
                guard let held = termIfKnown(entry.index), held != entry.term else { continue }
                throw InvariantViolation("committed entry overwritten", "node \(id) replaces index \(entry.index) "
                    + "term \(held) with term \(entry.term) while its commit index is \(commitBefore)")
            }
            try storage.append(ready.entries)
            for entry in ready.entries {
                disk.write(.entry(entry))
                try monitor.observeAppend(id, entry: entry, previousTerm: termIfKnown(entry.index - 1))
            }
        }
        if let hardState = ready.hardState {
            storage.setHardState(hardState)
            if ready.snapshot == nil { disk.write(.hardState(hardState)) }
        }
        if role == .leader {
            let first = try storage.firstIndex()
            let last = try storage.lastIndex()
            try monitor.observeLeader(id, term: term, firstIndex: first, lastIndex: last, termAt: termIfKnown)
        }
    }

    private func termIfKnown(_ index: LogIndex) -> Term? {
        try? storage.term(at: index)
    }

    private func apply(_ ready: Ready, monitor: inout SafetyMonitor, outcome: inout Outcome) throws {
        if let snapshot = ready.snapshot, snapshot.metadata.index > 0 {
            guard snapshot.metadata.index > applied else {
                throw InvariantViolation("monotonic apply", "node \(id) got snapshot at \(snapshot.metadata.index) "
                    + "after applying \(applied)")
            }
            stateMachine = try RegisterStateMachine(decoding: snapshot.data)
            applied = snapshot.metadata.index
            snapshotIndex = applied
            confState = snapshot.metadata.confState
            outcome.configurations.append((applied, confState))
            outcome.snapshotsReceived += 1
            try monitor.observeState(id, index: applied, stateDigest: stateMachine.digest, how: "restored from snapshot at")
        }
        try applyEntries(ready.committedEntries.drop { $0.index <= applied }, commit: commit, term: term,
                         monitor: &monitor, outcome: &outcome)
        for state in ready.readStates {
            guard let (client, request) = RegisterCommand.decodeReadContext(state.requestContext),
                  let position = readsAwaitingIndex.firstIndex(where: { $0.client == client && $0.request == request })
            else { continue }
            let read = readsAwaitingIndex.remove(at: position)
            readsAwaitingApply.append((state.index, client, request, read.key))
        }
    }

    private func applyEntries(_ entries: some Sequence<Entry>, commit: LogIndex, term: Term,
                              monitor: inout SafetyMonitor, outcome: inout Outcome) throws {
        for entry in entries {
            guard entry.index == applied + 1 else {
                throw InvariantViolation("monotonic apply", "node \(id) applied \(entry.index) after \(applied)")
            }
            guard entry.index <= commit else {
                throw InvariantViolation("apply beyond commit", "node \(id) applied \(entry.index) with commit \(commit)")
            }
            switch entry.kind {
            case .normal where !entry.data.isEmpty:
                let command = try RegisterCommand(decoding: entry.data)
                outcome.answers.append(Answer(client: command.client, request: command.request,
                                              output: stateMachine.apply(command)))
            case .normal:
                break
            case .confChange:
                confState = raw.applyConfChange(try ConfChange(decoding: entry.data))
                outcome.configurations.append((entry.index, confState))
            }
            applied = entry.index
            try monitor.observeApply(id, entry: entry, currentTerm: term, stateDigest: stateMachine.digest)
        }
    }

    private func answerReads(_ outcome: inout Outcome) {
        readsAwaitingApply.removeAll { read in
            guard read.index <= applied else { return false }
            outcome.answers.append(Answer(client: read.client, request: read.request,
                                          output: .value(stateMachine.read(read.key))))
            return true
        }
    }

    /// The application's own snapshot and log compaction, so lagging and new nodes need snapshot transfer.
    private func takeSnapshot() throws {
        let snapshot = try storage.createSnapshot(at: applied, confState: confState, data: stateMachine.encoded())
        try storage.compact(upTo: applied)
        disk.compact(to: snapshot)
        snapshotIndex = applied
    }
}
