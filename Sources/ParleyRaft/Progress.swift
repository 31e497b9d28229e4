/// The leader's record of one peer: how far its log matches, what to send next, and how.
final class Progress {
    var match: LogIndex
    var next: LogIndex
    var state: ProgressState = .probe
    /// In probe state: an append was sent and the leader waits for an answer (or a heartbeat answer).
    var msgAppFlowPaused = false
    var inflights: Inflights
    var isLearner: Bool
    /// Heard from within the current check-quorum period.
    var recentActive: Bool
    /// The commit index last sent to this peer, so a heartbeat answer can trigger a commit update.
    var sentCommit: LogIndex = 0
    /// The leader's tick stamp of the latest heartbeat this peer acknowledged (lease reads).
    var heartbeatAckTick: UInt64 = 0
    /// Snapshot transfer (state `.snapshot`): its index and term, and the bytes acknowledged and sent.
    var pendingSnapshot: LogIndex = 0
    var pendingSnapshotTerm: Term = 0
    var snapshotAcked: UInt64 = 0
    var snapshotSent: UInt64 = 0
    var snapshotAckSeen = false
    /// `snapshotAcked` at the previous heartbeat answer: no progress between two means a chunk was lost.
    var snapshotAckedAtHeartbeat: UInt64 = .max

    init(match: LogIndex, next: LogIndex, inflights: Inflights, isLearner: Bool, recentActive: Bool) {
        self.match = match
        self.next = next
        self.inflights = inflights
        self.isLearner = isLearner
        self.recentActive = recentActive
    }

    func copy() -> Progress {
        let p = Progress(match: match, next: next, inflights: inflights, isLearner: isLearner, recentActive: recentActive)
        p.state = state
        p.msgAppFlowPaused = msgAppFlowPaused
        p.sentCommit = sentCommit
        p.heartbeatAckTick = heartbeatAckTick
        p.pendingSnapshot = pendingSnapshot
        p.pendingSnapshotTerm = pendingSnapshotTerm
        p.snapshotAcked = snapshotAcked
        p.snapshotSent = snapshotSent
        p.snapshotAckSeen = snapshotAckSeen
        p.snapshotAckedAtHeartbeat = snapshotAckedAtHeartbeat
        return p
    }

    private func reset(to state: ProgressState) {
        msgAppFlowPaused = false
        pendingSnapshot = 0
        pendingSnapshotTerm = 0
        snapshotAcked = 0
        snapshotSent = 0
        snapshotAckSeen = false
        snapshotAckedAtHeartbeat = .max
        self.state = state
        inflights.reset()
    }

    func becomeProbe() {
        // After a snapshot the peer holds at least the snapshot's index.
        if state == .snapshot {
            let pending = pendingSnapshot
            reset(to: .probe)
            next = max(match + 1, pending + 1)
        } else {
            reset(to: .probe)
            next = match + 1
        }
    }

    func becomeReplicate() {
        reset(to: .replicate)
        next = match + 1
    }

    func becomeSnapshot(index: LogIndex, term: Term) {
        reset(to: .snapshot)
        pendingSnapshot = index
        pendingSnapshotTerm = term
    }

    /// Records that the peer holds the log up to `n`; returns whether `match` moved.
    func maybeUpdate(_ n: LogIndex) -> Bool {
        var updated = false
        if match < n {
            match = n
            updated = true
            msgAppFlowPaused = false
        }
        next = max(next, n + 1)
        return updated
    }

    /// Handles a rejected append of index `rejected`; `matchHint` is where the peer's log may match.
    /// Returns false for a stale rejection.
    func maybeDecrTo(rejected: LogIndex, matchHint: LogIndex) -> Bool {
        if state == .replicate {
            if rejected <= match { return false }
            next = match + 1
            return true
        }
        if next == 0 || next - 1 != rejected { return false }
        next = max(min(rejected, matchHint + 1), match + 1)
        msgAppFlowPaused = false
        return true
    }

    /// Bookkeeping after an append with `entries` entries of `bytes` bytes ending at `lastIndex` was sent.
    func sentEntries(count entries: Int, bytes: Int, lastIndex: LogIndex) {
        switch state {
        case .replicate:
            if entries > 0 {
                next = lastIndex + 1
                inflights.add(index: lastIndex, bytes: bytes)
            }
        case .probe:
            msgAppFlowPaused = true
        case .snapshot:
            break
        }
    }

    /// Whether the leader must not send appends now.
    var isPaused: Bool {
        switch state {
        case .probe: return msgAppFlowPaused
        case .replicate: return inflights.isFull
        case .snapshot: return true
        }
    }

    var publicView: PeerProgress {
        PeerProgress(match: match, next: next, state: state, isLearner: isLearner, recentActive: recentActive,
                     inflightMessages: inflights.count, inflightBytes: inflights.bytes,
                     pendingSnapshot: pendingSnapshot, snapshotAckedBytes: snapshotAcked)
    }
}
