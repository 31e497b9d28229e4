import ParleyRaft
import ParleyRooms
import ParleyStorage
import ParleyWire
import ParleyRaftWire
import ParleyShardState

/// What the host needs of every group it drives, whatever state machine the group replicates.
protocol HostedGroup: AnyObject {
    var group: GroupID { get }
    var raft: RawNode { get }
    var log: DurableGroupLog { get }
    /// The membership this replica has applied.
    var confState: ConfState { get }
    /// Called each time a proposal is made here, as leader or passed on to the leader (the host counts them).
    var onProposed: () -> Void { get set }
    /// Called when a configuration change applies here: the configuration before and after, and whether
    /// this replica leads (the host counts moves once per group, on its leader).
    var onConfChange: (ConfState, ConfState, Bool) -> Void { get set }
    /// One logical clock tick: Raft's, and the clock that gives up on proposals passed on to a leader.
    func tick()
    /// First half of a ready cycle: take the group's Ready and stage what must be durable into `batch`.
    func collectReady(into batch: inout StorageBatch) throws -> Ready?
    /// Before the batch is written: apply the committed entries this replica already held durably before the
    /// cycle, and answer their proposers (a committed entry is on a quorum's disks; only this cycle's own
    /// appends have to wait for this node's sync).
    func applyDurableCommitted(_ ready: Ready)
    /// Second half, once the batch is durable: apply the committed entries, answer proposers, advance.
    func finishReady(_ ready: Ready, snapshots: SnapshotRule) throws
    /// SPEC D1: drops from memory the data of applied entries but the newest `keepBytes` of them (they stay on
    /// disk and are read back for a follower that needs them), so the host's logs stay within its bound.
    /// Returns the bytes freed.
    func evictLog(keepBytes: Int) -> Int
    /// The bytes of log entries this replica holds in memory.
    var logBytesHeld: Int { get }
    /// Whether a configuration change applied (or a snapshot replaced the configuration) since the last call.
    func takeConfigurationChanged() -> Bool
}

/// One group's replica on this node: its Raft node, its durable log, the state machine it applies to and
/// the proposals made here that wait for their entries to apply.
///
/// Issue 35: the host reaches its replicas through `HostedGroup`, which runs the generic code, and generic code
/// looks up type metadata (closure and tuple types over `Machine`) as it runs — with the wire's generic reads,
/// 5.8 % of the Raft loop's samples at 64 writers, 2 % after. The methods a command passes are also built for
/// shards (`@_specialize`): they check the type once on entry and run the specialized body.
final class GroupReplica<Machine: ReplicatedMachine>: HostedGroup {
    typealias Completion = (Result<Machine.Outcome, ClusterError>) -> Void

    let group: GroupID
    let raft: RawNode
    let log: DurableGroupLog
    private(set) var machine: Machine
    private(set) var applied: LogIndex
    /// Entry time never goes backwards, even when proposers' clocks disagree.
    private(set) var lastTimestamp: Int64 = 0
    /// Commands applied over the group's whole life (the last `ApplyContext.commandIndex`).
    private(set) var appliedCommands: UInt64 = 0
    /// SPEC A7: the signed server-API requests this group applied within their window.
    private(set) var requests = RequestLedger()
    private(set) var confState: ConfState { didSet { membersOutgrowSnapshot = Self.outgrows(confState, snapshotMembers) } }
    /// Where the last local snapshot was taken.
    private(set) var snapshotIndex: LogIndex
    /// Every member the last local snapshot's configuration names: a member added since can only be brought
    /// up by a newer snapshot (docs/simulator.md, Findings), so one is taken when the configuration outgrows it.
    private var snapshotMembers: Set<NodeID> { didSet { membersOutgrowSnapshot = Self.outgrows(confState, snapshotMembers) } }
    /// Whether `confState` names a member `snapshotMembers` does not: kept as either changes, so the check after
    /// every ready cycle builds no set (issue 35: it was a set and a sort per cycle per group).
    private var membersOutgrowSnapshot = false
    private var configurationChanged = false
    /// A proposal made here that waits for its entry to apply.
    private struct Waiting {
        /// The term in which this replica, leading, appended it: only entries of this term can carry it.
        var term: Term
        /// The tick at which this replica, its leader, stepped down (a leadership transfer, an election).
        var orphanedAt: UInt64?
        var completion: Completion
    }

    private var pending: [ProposalID: Waiting] = [:]
    /// Issue 34: reads waiting for their read index, then for this replica to apply that far.
    private var reads: PendingReads<ReadWaiter>
    /// What waits for a read index: a read, answered from the state once applied that far, or a caller of
    /// `catchUp`.
    private enum ReadWaiter {
        case read(Machine.Command, actor: CommandActor, timestamp: Int64, Completion)
        case catchUp((_ caughtUp: Bool) -> Void)

        /// Told that the read index did not come (the leader it asked is gone): a read is told to ask the
        /// leader again (safe to repeat); a catch-up ends, as it would with no leader known.
        func fail(_ leader: NodeID) {
            switch self {
            case .read(_, _, _, let completion): completion(.failure(.notLeader(leader: leader)))
            case .catchUp(let done): done(false)
            }
        }
    }
    /// A committed entry this replica could not read: nothing after it applies, and the cycle fails with it
    /// (the driver stops the node; docs/operations.md, Upgrades).
    private(set) var unreadable: ClusterError?
    /// The term of the last entry applied here: when it grows, proposals of earlier terms that have not
    /// applied never will.
    private var appliedTerm: Term = 0
    /// Proposals made since the group's last ready cycle; they enter the log together, as one entry.
    private var staged = ProposalBatch<Machine.Command>()
    private var ticks: UInt64 = 0
    /// A proposal whose leader stepped down and that has not applied after this many ticks is answered
    /// `outcomeUnknown`: its entry may still commit under the next leader, or may never.
    let orphanTimeoutTicks: UInt64
    private var termBeforeReady: Term = 0
    /// The last index this replica's log held on disk when the current cycle began (0 after a snapshot
    /// arrived in it): committed entries up to here may apply before the cycle's write.
    private var durableBeforeReady: LogIndex = 0
    /// Called for every applied entry, in log order, with the outcomes of the commands it carried (the host
    /// keeps each shard's event log from them).
    var onApplied: (LogIndex, [Machine.Outcome]) -> Void = { _, _ in }
    /// Called when a snapshot from the leader replaced the state: entries up to the index were never applied here.
    var onRestored: (LogIndex) -> Void = { _ in }
    /// Runs right after each command applies, with the machine (the host takes its history items).
    var afterApply: (inout Machine) -> Void = { _ in }
    /// Finishes the outcome a local proposer gets, when the machine alone cannot (a read that reaches past a
    /// room's in-memory window): decided right after the command, with the machine as it is then; nil when
    /// the outcome stands. The job it returns calls its argument once, at once or later on the host's loop.
    var finishAnswer: (Machine.Command, Machine.Outcome, Machine, ApplyContext) -> AnswerJob? = { _, _, _, _ in nil }
    typealias AnswerJob = (@escaping (Machine.Outcome) -> Void) -> Void
    /// Sets up every machine this replica makes or restores.
    private let prepare: (inout Machine) -> Void
    var onProposed: () -> Void = {}
    var onConfChange: (ConfState, ConfState, Bool) -> Void = { _, _, _ in }

    init(group: GroupID, log: DurableGroupLog, config: RaftConfig, orphanTimeoutTicks: UInt64 = 60,
         prepare: @escaping (inout Machine) -> Void = { _ in }, fresh: () -> Machine) throws {
        self.group = group
        self.orphanTimeoutTicks = orphanTimeoutTicks
        self.log = log
        reads = PendingReads(node: config.id)
        self.prepare = prepare
        let snapshot = try log.snapshot()
        if snapshot.data.isEmpty {
            machine = fresh()
        } else {
            (machine, lastTimestamp, appliedCommands, requests) = try Self.decodeSnapshot(snapshot.data)
        }
        prepare(&machine)
        applied = snapshot.metadata.index
        snapshotIndex = snapshot.metadata.index
        confState = snapshot.metadata.confState
        snapshotMembers = Set(snapshot.metadata.confState.allMembers)
        membersOutgrowSnapshot = false
        var config = config
        config.applied = applied
        raft = try RawNode(config: config, storage: log)
    }

    /// A group snapshot is the entry clock, the command count and the request ledger, followed by the
    /// machine's state, so a replica restored from it continues exactly as one that applied the log. It
    /// starts with -1 (a clock can never be negative) and a format byte; a snapshot without them is the
    /// first format, clock first and no ledger.
    private static func decodeSnapshot(_ data: [UInt8]) throws -> (Machine, Int64, UInt64, RequestLedger) {
        do {
            var r = ByteReader(data)
            var clock = try r.readInt64()
            var ledger = RequestLedger()
            if clock == -1 {
                let format = try r.readByte()
                guard format == Self.snapshotFormat else { throw CodecError.badVersion(format) }
                clock = try r.readInt64()
                let commands = try r.readUInt64()
                ledger = try RequestLedger(from: &r)
                return (try Machine(restoring: Array(data.suffix(r.remaining))), clock, commands, ledger)
            }
            let commands = try r.readUInt64()
            return (try Machine(restoring: Array(data.suffix(r.remaining))), clock, commands, ledger)
        } catch {
            throw ClusterError.snapshotUnreadable("\(error)")
        }
    }

    static var snapshotFormat: UInt8 { 2 }

    func snapshotData() -> [UInt8] {
        var w = ByteWriter()
        w.write(Int64(-1))
        w.write(Self.snapshotFormat)
        w.write(lastTimestamp)
        w.write(appliedCommands)
        requests.encode(to: &w)
        return w.bytes + machine.snapshot()
    }

    var isLeader: Bool { raft.softState.role == .leader }
    var leader: NodeID { raft.softState.leader }
    var pendingCount: Int { pending.count }

    // MARK: Proposals

    /// Proposes `request` (a write only on the leader). `requestForm`: the entry carries the request's bytes —
    /// `encoded`, as a peer's call brought them, or encoded here — in `GroupProposal`'s form 4, which every node
    /// of the cluster reads; otherwise form 3.
    @_specialize(where Machine == ShardState)
    func propose(_ request: GroupRequest<Machine.Command>, encoded: [UInt8]? = nil, requestForm: Bool = false,
                 id: ProposalID, timestamp: Int64, completion: @escaping Completion) {
        // A signed server-API read carries its request key into the log, so its Nonce is good for one answer in
        // the whole cluster (docs/api.md); every other read leaves the log.
        if request.requestKey == nil, Machine.isRead(request.command) {
            return read(request.command, actor: request.actor, timestamp: timestamp, completion: completion)
        }
        let soft = raft.softState
        // Issue 34, one road: only the leader appends a write. A follower names the leader it knows, and the
        // caller sends the command there by call, so the leader's checks (A1, W3) see every write; nothing is
        // passed on inside Raft, where it would go round them.
        guard soft.role == .leader else { return completion(.failure(.notLeader(leader: soft.leader))) }
        if requestForm {
            if let encoded {
                staged.append(id: id, timestamp: timestamp, request: encoded)
            } else {
                staged.append(id: id, timestamp: timestamp, request: request)
            }
        } else {
            staged.append(GroupProposal(id: id, timestamp: timestamp, actor: request.actor, command: request.command,
                                        requestKey: request.requestKey))
        }
        pending[id] = Waiting(term: raft.term, completion: completion)
        onProposed()
        if staged.isFull { proposeStaged() }
    }

    /// Issue 34: a read asks Raft for a read index — on a leader, a heartbeat round a quorum answers; on a
    /// follower, the leader's — and is answered once this replica applied that far (`serveReads`). No entry.
    private func read(_ command: Machine.Command, actor: CommandActor, timestamp: Int64, completion: @escaping Completion) {
        let soft = raft.softState
        guard soft.role == .leader || (soft.role == .follower && soft.leader != 0) else {
            return completion(.failure(.notLeader(leader: soft.leader)))
        }
        askReadIndex(for: .read(command, actor: actor, timestamp: timestamp, completion))
        onProposed()
    }

    /// Read your writes: calls `done` once this replica has applied everything its group had committed when
    /// asked (a read index, then the apply), so a write another replica answered is visible here. A leader
    /// has applied all it answered: `done(true)` at once. A replica that knows no leader cannot learn more, and a
    /// read index that never comes (its leader gone) gives up after 1 s: `done(false)`, this replica as it is.
    func catchUp(_ done: @escaping (_ caughtUp: Bool) -> Void) {
        let soft = raft.softState
        if soft.role == .leader { return done(true) }
        guard soft.role == .follower, soft.leader != 0 else { return done(false) }
        askReadIndex(for: .catchUp(done))
    }

    private func askReadIndex(for waiter: ReadWaiter) {
        raft.readIndex(reads.add(.init(waiter: waiter, index: nil, askedAt: ticks)))
    }

    /// Answers the reads whose index this replica has applied, from the state as it is now.
    @_specialize(where Machine == ShardState)
    private func serveReads() {
        guard !reads.isEmpty else { return }
        for read in reads.ready(applied: applied) {
            switch read.waiter {
            case .read(let command, let actor, let timestamp, let completion):
                let context = ApplyContext(commandIndex: appliedCommands, timestamp: max(lastTimestamp, timestamp), actor: actor)
                let outcome = machine.read(command, context: context)
                Self.deliver(outcome, finishAnswer(command, outcome, machine, context), to: completion)
            case .catchUp(let done):
                done(true)
            }
        }
    }

    /// Puts the staged proposals into the log as one entry. If Raft refuses them (this replica stepped down
    /// since they were staged), their callers hear why at once.
    @_specialize(where Machine == ShardState)
    private func proposeStaged() {
        guard !staged.isEmpty else { return }
        let batch = staged
        staged = ProposalBatch()
        let refusal: ClusterError
        do {
            try raft.propose(batch.bytes)
            let term = raft.term
            for id in batch.ids { pending[id]?.term = term }
            return
        } catch let RaftError.notLeader(leader) {
            refusal = .notLeader(leader: leader)
        } catch {
            refusal = .proposalRefused("\(error)")
        }
        for id in batch.ids { pending.removeValue(forKey: id)?.completion(.failure(refusal)) }
    }

    // MARK: Ready cycle

    @_specialize(where Machine == ShardState)
    func collectReady(into batch: inout StorageBatch) throws -> Ready? {
        proposeStaged()
        guard raft.hasReady else { return nil }
        termBeforeReady = log.hardState.term
        let rd = raft.ready()
        for state in rd.readStates { reads.indexed(state.requestContext, at: state.index) }
        if let snapshot = rd.snapshot, !snapshot.isEmpty {
            try log.applySnapshot(snapshot)
            (machine, lastTimestamp, appliedCommands, requests) = try Self.decodeSnapshot(snapshot.data)
            prepare(&machine)
            applied = snapshot.metadata.index
            snapshotIndex = snapshot.metadata.index
            confState = snapshot.metadata.confState
            snapshotMembers = Set(confState.allMembers)
            configurationChanged = true
            onRestored(applied)
            // Entries up to here were never applied here: whether a proposal of their terms applied is not known.
            let restored = snapshot.metadata.term
            failPending { $0.term <= restored }
            appliedTerm = max(appliedTerm, restored)
            durableBeforeReady = 0
        } else {
            // Every earlier cycle's entries were written (synced) before that cycle ended.
            durableBeforeReady = try log.lastIndex()
        }
        try log.append(rd.entries)
        if let hs = rd.hardState { log.setHardState(hs) }
        log.stage(into: &batch)
        return rd
    }

    @_specialize(where Machine == ShardState)
    func applyDurableCommitted(_ rd: Ready) {
        // Not past what was on disk here before the cycle: a group with one voter commits its leader's
        // entries the moment they are appended, before any disk holds them.
        for entry in rd.committedEntries {
            guard entry.index <= durableBeforeReady else { break }
            if entry.index > applied { apply(entry) }
        }
    }

    @_specialize(where Machine == ShardState)
    func finishReady(_ rd: Ready, snapshots: SnapshotRule) throws {
        for entry in rd.committedEntries where entry.index > applied { apply(entry) }
        if let unreadable { throw unreadable }
        raft.advance(rd)
        serveReads()
        // Only a change of role or term can orphan a proposal.
        if rd.softState != nil || rd.hardState.map({ $0.term != termBeforeReady }) == true { markOrphanedProposals() }
        try snapshotIfDue(snapshots)
    }

    /// Applies one committed entry: each command of its batch in order, or a membership change. A leader's
    /// empty entry changes nothing; an entry this version cannot decode stops here (`unreadable`), never
    /// skipped (the other replicas apply it).
    @_specialize(where Machine == ShardState)
    private func apply(_ entry: Entry) {
        guard unreadable == nil else { return }  // the node is stopping: nothing after it applies
        precondition(entry.index == applied + 1, "group \(group): applying \(entry.index) after \(applied)")
        func refuse(_ error: Error) {
            unreadable = .entryUnreadable(group: group, index: entry.index, reason: "\(error)")
        }
        switch entry.kind {
        case .confChange:
            let cc: ConfChange
            do { cc = try ConfChange(decoding: entry.data) } catch { return refuse(error) }
            applied = entry.index
            defer { answerSuperseded(byTerm: entry.term) }
            let before = confState
            confState = raft.applyConfChange(cc)
            configurationChanged = true
            onConfChange(before, confState, raft.softState.role == .leader)
            onApplied(entry.index, [])
        case .normal:
            // An empty entry is a new leader's first: nothing to apply.
            let proposals: [GroupProposal<Machine.Command>]
            do {
                proposals = entry.data.isEmpty ? [] : try ProposalBatch<Machine.Command>.proposals(in: entry.data)
            } catch {
                return refuse(error)
            }
            applied = entry.index
            defer { answerSuperseded(byTerm: entry.term) }
            guard !proposals.isEmpty else { return onApplied(entry.index, []) }
            var outcomes: [Machine.Outcome] = []
            outcomes.reserveCapacity(proposals.count)
            // Proposers hear back after the entry's events are published, as each answer was computed
            // right after its own command (with the state as it was then).
            var answers: [(Completion, Machine.Outcome, AnswerJob?)] = []
            for proposal in proposals {
                lastTimestamp = max(lastTimestamp, proposal.timestamp)
                appliedCommands += 1
                let context = ApplyContext(commandIndex: appliedCommands, timestamp: lastTimestamp, actor: proposal.actor)
                let outcome: Machine.Outcome
                switch proposal.requestKey.map({ requests.admit($0, now: lastTimestamp) }) ?? .fresh {
                case .fresh:
                    outcome = machine.apply(proposal.command, context: context)
                    afterApply(&machine)
                case .replayed:
                    outcome = Machine.refusedRequest(.replayed)
                case .full:
                    outcome = Machine.refusedRequest(.ledgerFull)
                }
                outcomes.append(outcome)
                if let waiting = pending.removeValue(forKey: proposal.id) {
                    // Only a read (a signed one rides the log) may need finishing; asking for a write would
                    // copy the whole machine for the closure on every answer (issue 35).
                    let job = Machine.isRead(proposal.command) ? finishAnswer(proposal.command, outcome, machine, context) : nil
                    answers.append((waiting.completion, outcome, job))
                }
            }
            onApplied(entry.index, outcomes)
            for (completion, outcome, job) in answers { Self.deliver(outcome, job, to: completion) }
        }
    }

    @_specialize(where Machine == ShardState)
    private static func deliver(_ outcome: Machine.Outcome, _ job: AnswerJob?, to completion: @escaping Completion) {
        guard let job else { return completion(.success(outcome)) }
        job { completion(.success($0)) }
    }

    /// A proposal appended in an earlier term, or on a replica that has stepped down since, may never apply
    /// (a new leader can overwrite it) — or may: a leadership transfer hands the whole log to a caught-up
    /// heir, which commits it. So it waits, a while: it applies, or an entry of a later term applies first
    /// and it never will (`answerSuperseded`), or its caller is told after `orphanTimeoutTicks` that the
    /// outcome is unknown rather than left waiting.
    private func markOrphanedProposals() {
        let stillLeader = raft.softState.role == .leader
        let term = raft.term
        for (id, w) in pending where w.orphanedAt == nil && (!stillLeader || w.term < term) {
            pending[id]!.orphanedAt = ticks
        }
    }

    /// An entry of `term` applied: proposals of earlier terms that have not applied never will (entries of a
    /// term all come before any of a later one), so their callers hear they were not applied, which is
    /// safe to retry.
    @_specialize(where Machine == ShardState)
    private func answerSuperseded(byTerm term: Term) {
        guard term > appliedTerm else { return }
        appliedTerm = term
        let leader = raft.softState.leader
        let ids = pending.filter { $0.value.term < term }.keys.sorted { $0.sequence < $1.sequence }
        for id in ids { pending.removeValue(forKey: id)!.completion(.failure(.notLeader(leader: leader))) }
    }

    func takeConfigurationChanged() -> Bool {
        defer { configurationChanged = false }
        return configurationChanged
    }

    func tick() {
        raft.tick()
        ticks += 1
        guard ticks % 10 == 0 else { return }
        let limit = orphanTimeoutTicks
        let now = ticks
        failPending { w in w.orphanedAt.map { now - $0 >= limit } ?? false }
        // A read not answered within 20 ticks (1 s) — its read index request lost with a leader that stepped
        // down, or this follower not yet applied to its index — is told to try the leader again (safe to repeat).
        if now > 20 {
            for read in reads.expired(askedBefore: now - 20) { read.waiter.fail(raft.softState.leader) }
        }
    }

    /// The replica is being dropped (its group removed this node): what it appended may still apply
    /// elsewhere, so every caller still waiting hears the outcome is unknown rather than waiting forever.
    func abandonPending() {
        failPending { _ in true }
        for read in reads.expired(askedBefore: nil) { read.waiter.fail(0) }
    }

    private func failPending(where orphaned: (Waiting) -> Bool) {
        let ids = pending.filter { orphaned($0.value) }.keys.sorted { $0.sequence < $1.sequence }
        for id in ids { pending.removeValue(forKey: id)!.completion(.failure(.outcomeUnknown)) }
    }

    /// Takes a snapshot when the log has grown by `every` entries or `everyBytes` bytes since the last one.
    @_specialize(where Machine == ShardState)
    private func snapshotIfDue(_ rule: SnapshotRule) throws {
        let outgrown = applied > snapshotIndex && membersOutgrowSnapshot
        guard outgrown || applied >= snapshotIndex + rule.every
                || (applied > snapshotIndex && log.bytesSinceSnapshot >= rule.everyBytes)
        else { return }
        try snapshotAndCompact(rule)
    }

    private static func outgrows(_ conf: ConfState, _ members: Set<NodeID>) -> Bool {
        !Set(conf.allMembers).isSubset(of: members)
    }

    var logBytesHeld: Int { log.heldBytes }

    func evictLog(keepBytes: Int) -> Int {
        let before = log.heldBytes
        var through = applied
        var kept = 0
        while through > log.evictedThrough {
            kept += log.heldSize(at: through)
            if kept > keepBytes { break }
            through -= 1
        }
        log.evict(through: through)
        return before - log.heldBytes
    }

    private func snapshotAndCompact(_ rule: SnapshotRule) throws {
        try log.createSnapshot(at: applied, confState: confState, data: snapshotData())
        snapshotIndex = applied
        snapshotMembers = Set(confState.allMembers)
        try compact(rule)
    }

    /// Drops the entries the snapshot covers, keeping the newest `keep` of them within `keepBytes` for
    /// followers a little behind (further behind, they get the snapshot).
    private func compact(_ rule: SnapshotRule) throws {
        let first = try log.firstIndex()
        guard snapshotIndex >= first else { return }
        var upTo = snapshotIndex
        var bytes = 0
        while upTo >= first, snapshotIndex - upTo < rule.keep {
            bytes += log.heldSize(at: upTo)
            if bytes > rule.keepBytes { break }
            upTo -= 1
        }
        // Entries evicted from memory behind the snapshot go too: their rows may be deleted with it.
        upTo = max(upTo, min(log.evictedThrough, snapshotIndex))
        if upTo >= first { try log.compact(upTo: upTo) }
    }
}
