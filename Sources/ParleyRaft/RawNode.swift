/// The public face of one Raft node: feed it ticks, messages and requests, then collect a `Ready`,
/// persist and send what it holds, apply the committed entries, and call `advance(_:)`.
///
/// Not thread-safe: use it from one thread or actor. Nothing in it reads a clock, does I/O or draws
/// randomness other than from the injected generator, so the same inputs give the same outputs.
public final class RawNode {
    let raft: Raft
    private var prevSoftState: SoftState
    private var prevHardState: HardState

    /// Creates a node from its stable storage (a new member, or one restarting).
    public convenience init(config: RaftConfig, storage: RaftStorage) throws {
        try self.init(config: config, storage: storage, random: nil)
    }

    /// Creates a node with an explicit source of election jitter (default: `SplitMix64` seeded from
    /// `config.randomSeed` and the id).
    public init(config: RaftConfig, storage: RaftStorage, random: (any RaftRandom)?) throws {
        raft = try Raft(config: config, storage: storage, random: random)
        prevSoftState = raft.softState
        prevHardState = raft.hardState
    }

    /// Advances the logical clock by one tick (elections, heartbeats, check-quorum, quiescence).
    public func tick() {
        raft.tick()
    }

    /// Starts an election now (with a pre-vote round when enabled). Does nothing on a leader.
    public func campaign() throws {
        guard raft.role != .leader else { return }
        guard raft.promotable else { throw RaftError.notVoter }
        raft.hup(raft.preVote ? .preElection : .election)
    }

    /// Proposes an application command. Throws unless this node is the leader and can take it now.
    public func propose(_ data: [UInt8]) throws {
        try raft.propose([data])
    }

    /// Proposes several commands at once (all or none are appended).
    public func propose(batch: [[UInt8]]) throws {
        try raft.propose(batch)
    }

    /// Proposes a membership change; refused while another change is unapplied or when the change is
    /// invalid in the current configuration.
    public func proposeConfChange(_ cc: ConfChange) throws {
        try raft.proposeConfChange(cc)
    }

    /// Delivers a message from a peer. A message addressed to another node is refused.
    public func step(_ message: Message) throws {
        guard message.to == raft.id else { throw RaftError.wrongRecipient(message.to) }
        if let problem = message.inconsistency { throw RaftError.malformedMessage(problem) }
        raft.step(message)
    }

    /// Asks for a linearizable read: a `ReadState` with `context` comes back in a later `Ready`; the
    /// read may be served once the application has applied its index. Contexts must be unique per
    /// request. Without a known leader the request is dropped (retry after a timeout).
    public func readIndex(_ context: [UInt8]) {
        raft.readIndex(context)
    }

    /// Hands leadership to `to` (forwarded to the leader from a follower). The leader first brings a
    /// lagging transferee up to date; proposals are refused until the transfer ends (done, or abandoned
    /// after an election timeout).
    public func transferLeadership(to: NodeID) {
        raft.transferLeadership(to: to)
    }

    /// Applies a committed configuration change; call it when applying a `.confChange` entry.
    @discardableResult
    public func applyConfChange(_ cc: ConfChange) -> ConfState {
        raft.applyConfChange(cc)
    }

    /// The transport could not reach `id`: the leader stops streaming to it and probes. Also wakes a
    /// quiet node, so a follower whose leader is gone starts its election timer again.
    public func reportUnreachable(_ id: NodeID) {
        raft.reportUnreachable(id)
    }

    /// The transport reached peer `id` again: a replica without a leader campaigns (pre-vote) at once.
    public func reportReachable(_ id: NodeID) {
        raft.reportReachable(id)
    }

    /// Reports the outcome of a snapshot transfer driven by the application (chunked transfers inside
    /// the core finish by themselves).
    public func reportSnapshot(_ id: NodeID, success: Bool) {
        raft.reportSnapshot(id, success: success)
    }

    /// Wakes a quiet node (e.g. when the host suspects the leader is gone).
    public func wake() {
        raft.wake()
    }

    /// With `RaftConfig.deferCommitNotice`: the leader's commit index when a follower it can send to has not
    /// been sent it yet; the host then calls `sendCommit()` after a short while.
    public var unsentCommit: LogIndex? { raft.unsentCommit }

    /// Sends the commit index to the followers not yet sent it (none when appends carried it meanwhile).
    public func sendCommit() {
        raft.sendCommit()
    }

    /// Whether `ready()` has anything to do.
    public var hasReady: Bool {
        let r = raft
        if r.broadcastPending || !r.msgs.isEmpty || !r.readStates.isEmpty { return true }
        if r.softState != prevSoftState { return true }
        let hs = r.hardState
        if !hs.isEmpty && hs != prevHardState { return true }
        if r.log.unstable.snapshot != nil || !r.log.unstable.entries.isEmpty { return true }
        return r.log.hasNextCommittedEntries
    }

    /// Collects what the application must persist, send and apply. Call `advance(_:)` when done, before
    /// the next `ready()`.
    public func ready() -> Ready {
        let r = raft
        if r.broadcastPending && r.role == .leader { r.broadcastAppend() }
        r.broadcastPending = false
        var rd = Ready()
        let soft = r.softState
        if soft != prevSoftState {
            rd.softState = soft
            prevSoftState = soft
        }
        let hard = r.hardState
        if hard != prevHardState { rd.hardState = hard }
        rd.entries = r.log.unstable.entries
        rd.snapshot = r.log.unstable.snapshot
        rd.committedEntries = r.log.nextCommittedEntries()
        rd.messages = r.msgs
        r.msgs.removeAll(keepingCapacity: true)
        rd.readStates = r.readStates
        r.readStates.removeAll()
        // A vote, a term, entries or a snapshot must be on disk before any message that reveals them;
        // a commit index alone can be learned again.
        rd.mustSync = !rd.entries.isEmpty || rd.snapshot != nil || hard.term != prevHardState.term
            || hard.vote != prevHardState.vote
        return rd
    }

    /// Tells the node the `Ready` was handled: its writes are durable, its messages sent and its
    /// committed entries applied.
    public func advance(_ ready: Ready) {
        let r = raft
        if let hs = ready.hardState { prevHardState = hs }
        if let last = ready.entries.last { r.log.unstable.stableTo(index: last.index, term: last.term) }
        if let snapshot = ready.snapshot {
            r.log.unstable.stableSnapshotTo(index: snapshot.metadata.index)
            r.appliedTo(snapshot.metadata.index)
        }
        if let last = ready.committedEntries.last {
            if r.role == .leader { r.reduceUncommittedSize(ready.committedEntries) }
            r.appliedTo(last.index)
        }
    }

    /// The role and the leader this node knows of, without building a whole `status` (hot path).
    public var softState: SoftState { raft.softState }

    /// A configuration change was proposed and has not applied yet: another would be refused.
    public var hasPendingConfChange: Bool { raft.pendingConfIndex > raft.log.applied }

    /// The current term, without building a whole `status` (hot path).
    public var term: Term { raft.term }

    /// The index of the last entry in this node's log (a leader's proposal is appended there).
    public var lastIndex: LogIndex { raft.log.lastIndex }

    /// A snapshot of the node's state for observation.
    public var status: RaftStatus {
        let r = raft
        var progress: [NodeID: PeerProgress] = [:]
        if r.role == .leader {
            for (pid, pr) in r.tracker.progress { progress[pid] = pr.publicView }
        }
        return RaftStatus(id: r.id, hardState: r.hardState, softState: r.softState, applied: r.log.applied,
                          lastIndex: r.log.lastIndex, firstIndex: r.log.firstIndex, confState: r.tracker.confState,
                          progress: progress, leadTransferee: r.leadTransferee, isQuiesced: r.quiesced,
                          uncommittedBytes: r.uncommittedSize)
    }
}
