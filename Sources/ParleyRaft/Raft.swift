/// How an election was started.
enum CampaignKind {
    /// A pre-vote round: ask whether an election could be won, without raising the term.
    case preElection
    case election
    /// An election ordered by the leader (TimeoutNow): skips pre-vote and the followers' leader lease.
    case transfer
}

/// The Raft state machine of one node: roles, terms, elections, replication, reads and membership.
/// Pure: its only inputs are calls and messages, its only outputs `msgs`, `readStates` and the log.
final class Raft {
    let id: NodeID
    var term: Term = 0
    var vote: NodeID = 0
    let log: RaftLog
    var tracker: ProgressTracker
    var role: Role = .follower
    var isLearner = false
    var lead: NodeID = 0
    /// The node leadership is being handed to (0 = none).
    var leadTransferee: NodeID = 0
    /// Index of the last configuration change the leader appended; only one may be unapplied at a time.
    var pendingConfIndex: LogIndex = 0
    /// Payload bytes of the leader's uncommitted entries (the backpressure cap).
    var uncommittedSize = 0
    var readOnly: ReadOnly
    /// Read requests that reached a new leader before it committed an entry of its term.
    var pendingReadIndexMessages: [Message] = []
    var readStates: [ReadState] = []
    var msgs: [Message] = []
    /// Proposals were appended; appends go out when the `Ready` is built, so a burst travels together.
    var broadcastPending = false

    var electionElapsed = 0
    var heartbeatElapsed = 0
    var randomizedElectionTimeout = 0
    let electionTimeout: Int
    let heartbeatTimeout: Int
    let checkQuorum: Bool
    let forwardProposals: Bool
    let deferCommitNotice: Bool
    let preVote: Bool
    let stepDownOnRemoval: Bool
    let maxMsgSize: Int
    let maxUncommittedSize: Int
    let snapshotChunkBytes: Int
    var random: any RaftRandom

    /// Quiescence: a quiet node neither heartbeats nor runs its election timer.
    var quiesced = false
    var idleTicks = 0
    let quiesceAfterTicks: Int?
    /// Leader lease (lease-based reads): the leader's own tick count, stamped on heartbeats and echoed
    /// back, so the lease runs from when a quorum-acknowledged heartbeat was SENT.
    var leaderTicks: UInt64 = 0
    let leaseTicks: UInt64
    /// Set once this leader ordered a transfer: the transferee's election ignores leases, so this leader
    /// must not serve lease reads again in its term.
    var leaseRevoked = false
    /// A node that just started does not know whether a leader holds a lease, so (with lease reads)
    /// it refuses votes for one election timeout, as if it had just heard from a leader.
    var assumeLeaseAtStart: Bool

    /// A snapshot being received in chunks, and from whom: a transfer resumes only from the same
    /// sender, as two nodes' snapshots at one index may be encoded differently.
    var incomingSnapshot: (from: NodeID, metadata: SnapshotMetadata, total: UInt64, data: [UInt8])?

    init(config: RaftConfig, storage: RaftStorage, random: (any RaftRandom)?) throws {
        try config.validate()
        id = config.id
        electionTimeout = config.electionTick
        heartbeatTimeout = config.heartbeatTick
        checkQuorum = config.checkQuorum
        forwardProposals = config.forwardProposals
        deferCommitNotice = config.deferCommitNotice
        preVote = config.preVote
        stepDownOnRemoval = config.stepDownOnRemoval
        maxMsgSize = config.maxSizePerMessage
        maxUncommittedSize = config.maxUncommittedEntriesSize
        snapshotChunkBytes = config.snapshotChunkBytes
        quiesceAfterTicks = config.quiesceAfterTicks
        leaseTicks = UInt64(max(0, config.electionTick - config.leaseDriftMarginTicks))
        assumeLeaseAtStart = config.readOnlyOption == .leaseBased
        // Mix the id in so members sharing a seed still draw different timeouts.
        self.random = random ?? SplitMix64(seed: config.randomSeed ^ (config.id &* 0x9E37_79B9_7F4A_7C15))
        readOnly = ReadOnly(option: config.readOnlyOption)
        log = try RaftLog(storage: storage, maxCommittedBytesPerReady: config.maxCommittedSizePerReady)
        tracker = ProgressTracker(maxInflight: config.maxInflightMessages, maxInflightBytes: config.maxInflightBytes)
        let (hardState, confState) = try storage.initialState()
        do {
            let (cfg, prs) = try ConfChanger.restore(confState, tracker: tracker, lastIndex: log.lastIndex)
            _ = switchToConfig(cfg, prs)
        } catch let error as ConfChangeError {
            throw RaftError.storage("stored membership is invalid: \(error.reason)")
        }
        if !hardState.isEmpty {
            guard hardState.commit >= log.committed, hardState.commit <= log.lastIndex else {
                throw RaftError.storage("commit \(hardState.commit) is outside [\(log.committed), \(log.lastIndex)]")
            }
            log.commit(to: hardState.commit)
            term = hardState.term
            vote = hardState.vote
        }
        if config.applied > 0 { log.applied(to: min(config.applied, log.committed)) }
        becomeFollower(term: term, lead: 0)
    }

    var hardState: HardState { HardState(term: term, vote: vote, commit: log.committed) }
    var softState: SoftState { SoftState(leader: lead, role: role) }

    /// A voter of the current configuration that is not waiting to apply its own removal.
    var promotable: Bool {
        guard let pr = tracker.progress[id] else { return false }
        return !pr.isLearner && !log.hasPendingSnapshot
    }

    // MARK: - Sending

    func send(_ m: Message) {
        var m = m
        m.from = id
        // Vote traffic carries its own term; a forwarded request carries none (it is local to the leader).
        switch m.kind {
        case .vote, .voteResponse, .preVote, .preVoteResponse:
            break
        case .readIndex, .transferLeader, .propose:
            m.term = 0
        default:
            m.term = term
        }
        msgs.append(m)
    }

    // MARK: - Role changes

    func reset(term newTerm: Term) {
        if term != newTerm {
            term = newTerm
            vote = 0
        }
        lead = 0
        electionElapsed = 0
        heartbeatElapsed = 0
        resetRandomizedElectionTimeout()
        abortLeaderTransfer()
        tracker.resetVotes()
        let last = log.lastIndex
        for pid in tracker.memberIDs {
            let pr = tracker.progress[pid]!
            let fresh = Progress(match: 0, next: last + 1,
                                 inflights: Inflights(capacity: tracker.maxInflight, maxBytes: tracker.maxInflightBytes),
                                 isLearner: pr.isLearner, recentActive: pid == id)
            if pid == id { fresh.match = last }
            tracker.progress[pid] = fresh
        }
        pendingConfIndex = 0
        uncommittedSize = 0
        readOnly = ReadOnly(option: readOnly.option)
        pendingReadIndexMessages = []
        broadcastPending = false
        quiesced = false
        idleTicks = 0
        leaseRevoked = false
    }

    func resetRandomizedElectionTimeout() {
        randomizedElectionTimeout = electionTimeout + random.next(upperBound: electionTimeout)
    }

    func becomeFollower(term: Term, lead: NodeID) {
        reset(term: term)
        self.lead = lead
        role = .follower
    }

    func becomePreCandidate() {
        precondition(role != .leader, "leader cannot become pre-candidate")
        // Neither the term nor the vote changes: a pre-vote that fails leaves no trace.
        tracker.resetVotes()
        lead = 0
        role = .preCandidate
        quiesced = false
    }

    func becomeCandidate() {
        precondition(role != .leader, "leader cannot become candidate")
        reset(term: term + 1)
        vote = id
        role = .candidate
    }

    func becomeLeader() {
        precondition(role != .follower, "follower cannot become leader without an election")
        reset(term: term)
        lead = id
        role = .leader
        tracker.progress[id]?.becomeReplicate()
        // Conservatively, any change in the uncommitted tail may be a configuration change.
        pendingConfIndex = log.lastIndex
        // The empty entry of the new term lets earlier entries commit (Figure 8) and read index start.
        _ = appendEntries([Entry(term: 0, index: 0)], checkCap: false)
    }

    // MARK: - Ticks

    func tick() {
        if quiesced { return }
        if role == .leader { tickHeartbeat() } else { tickElection() }
    }

    private func tickElection() {
        electionElapsed += 1
        if electionElapsed >= electionTimeout { assumeLeaseAtStart = false }
        if promotable && electionElapsed >= randomizedElectionTimeout {
            electionElapsed = 0
            hup(preVote ? .preElection : .election)
        }
    }

    private func tickHeartbeat() {
        leaderTicks += 1
        heartbeatElapsed += 1
        electionElapsed += 1
        if electionElapsed >= electionTimeout {
            electionElapsed = 0
            if checkQuorum {
                if !tracker.quorumActive() {
                    becomeFollower(term: term, lead: 0)
                    return
                }
                for pid in tracker.memberIDs where pid != id { tracker.progress[pid]!.recentActive = false }
            }
            if leadTransferee != 0 { abortLeaderTransfer() }
        }
        if heartbeatElapsed >= heartbeatTimeout {
            heartbeatElapsed = 0
            idleTicks += heartbeatTimeout
            if canQuiesce {
                quiesce()
            } else {
                broadcastHeartbeat(context: readOnly.lastPendingContext)
            }
        }
    }

    // MARK: - Elections

    /// Starts an election unless this node is leader, cannot vote, or has a configuration change
    /// committed but not applied (it might not be a voter once that change is applied).
    func hup(_ kind: CampaignKind) {
        guard role != .leader, promotable else { return }
        if hasUnappliedConfChange() { return }
        campaign(kind)
    }

    private func hasUnappliedConfChange() -> Bool {
        guard log.committed > log.applied else { return false }
        let lo = max(log.applied + 1, log.firstIndex)
        guard let ents = try? log.slice(lo, log.committed + 1, maxBytes: .max) else { return false }
        return ents.contains { $0.kind == .confChange }
    }

    func campaign(_ kind: CampaignKind) {
        let voteKind: MessageKind
        let voteTerm: Term
        if kind == .preElection {
            becomePreCandidate()
            voteKind = .preVote
            voteTerm = term + 1  // the term it would campaign in
        } else {
            becomeCandidate()
            voteKind = .vote
            voteTerm = term
        }
        if poll(id, granted: true) == .won {
            // A single voter wins at once.
            if kind == .preElection { campaign(.election) } else { becomeLeader() }
            return
        }
        for voter in tracker.config.voters.ids where voter != id {
            send(Message(kind: voteKind, to: voter, term: voteTerm, logTerm: log.lastTerm, index: log.lastIndex,
                         campaignTransfer: kind == .transfer))
        }
    }

    func poll(_ from: NodeID, granted: Bool) -> VoteResult {
        tracker.recordVote(from, granted: granted)
        return tracker.tallyVotes().result
    }

    // MARK: - Proposals

    /// Appends entries (setting their term and index) as leader; with `checkCap` refuses them when they
    /// would take the uncommitted payload over the cap.
    func appendEntries(_ entries: [Entry], checkCap: Bool) -> Bool {
        let size = entries.payloadSize
        if checkCap && uncommittedSize > 0 && size > 0 && uncommittedSize + size > maxUncommittedSize {
            return false
        }
        uncommittedSize += size
        var last = log.lastIndex
        var ents = entries
        for i in ents.indices {
            last += 1
            ents[i].term = term
            ents[i].index = last
        }
        log.append(ents[...])
        _ = tracker.progress[id]?.maybeUpdate(last)
        // A single voter commits at once.
        _ = maybeCommit()
        idleTicks = 0
        return true
    }

    func reduceUncommittedSize(_ entries: [Entry]) {
        uncommittedSize = max(0, uncommittedSize - entries.payloadSize)
    }

    func maybeCommit() -> Bool {
        log.maybeCommit(index: tracker.committedIndex(), term: term)
    }

    // MARK: - Leadership transfer

    func abortLeaderTransfer() {
        leadTransferee = 0
    }

    func sendTimeoutNow(to target: NodeID) {
        leaseRevoked = true
        send(Message(kind: .timeoutNow, to: target))
    }
}
