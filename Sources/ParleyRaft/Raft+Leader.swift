extension Raft {
    func stepLeader(_ m: Message) {
        switch m.kind {
        case .readIndex:
            handleReadIndexRequest(m)
            return
        case .transferLeader:
            handleTransferLeader(to: m.transferee)
            return
        case .propose:
            handleForwardedProposal(m)
            return
        default:
            break
        }
        guard let pr = tracker.progress[m.from] else { return }
        switch m.kind {
        case .appendResponse:
            pr.recentActive = true
            handleAppendResponse(m, pr)
        case .heartbeatResponse:
            pr.recentActive = true
            handleHeartbeatResponse(m, pr)
        case .snapshotResponse:
            pr.recentActive = true
            handleSnapshotResponse(m, pr)
        default:
            break
        }
    }

    // MARK: - Appends

    /// Sends appends to every peer that is not paused (with an empty one to probe where needed).
    func broadcastAppend() {
        broadcastPending = false
        for pid in tracker.memberIDs where pid != id { sendAppend(to: pid) }
    }

    func sendAppend(to pid: NodeID) {
        _ = maybeSendAppend(to: pid, sendIfEmpty: true)
    }

    /// Sends one append to `pid` unless its progress is paused or (without `sendIfEmpty`) there is
    /// nothing new; falls back to a snapshot when the entries it needs are compacted.
    @discardableResult
    func maybeSendAppend(to pid: NodeID, sendIfEmpty: Bool) -> Bool {
        guard let pr = tracker.progress[pid], !pr.isPaused else { return false }
        let prevIndex = pr.next - 1
        guard let prevTerm = try? log.term(at: prevIndex) else {
            return startSnapshot(to: pid, pr)
        }
        var ents: [Entry] = []
        // Up to maxSizePerMessage of entries; in probe state the peer is then paused until it answers.
        if pr.next <= log.lastIndex {
            guard let e = try? log.entries(from: pr.next, maxBytes: maxMsgSize) else {
                return startSnapshot(to: pid, pr)
            }
            ents = e
        }
        if ents.isEmpty && !sendIfEmpty { return false }
        let bytes = ents.byteSize
        send(Message(kind: .append, to: pid, logTerm: prevTerm, index: prevIndex, entries: ents, commit: log.committed))
        pr.sentEntries(count: ents.count, bytes: bytes, lastIndex: ents.last?.index ?? prevIndex)
        pr.sentCommit = max(pr.sentCommit, log.committed)
        return true
    }

    /// The commit index when some follower that can be sent an append has not been sent it yet (with
    /// `deferCommitNotice`); nil otherwise, and on a follower.
    var unsentCommit: LogIndex? {
        guard role == .leader else { return nil }
        let committed = log.committed
        for pid in tracker.memberIDs where pid != id {
            let pr = tracker.progress[pid]!
            if pr.sentCommit < committed && !pr.isPaused { return committed }
        }
        return nil
    }

    /// Sends the commit index (in an append, with any entries not yet sent) to each follower that has not
    /// been sent it — none when its appends or heartbeats carried it meanwhile, or when the broadcast this
    /// Ready makes for new proposals is about to.
    func sendCommit() {
        guard role == .leader, !broadcastPending else { return }
        for pid in tracker.memberIDs where pid != id {
            if tracker.progress[pid]!.sentCommit < log.committed { _ = maybeSendAppend(to: pid, sendIfEmpty: true) }
        }
    }

    private func handleAppendResponse(_ m: Message, _ pr: Progress) {
        if m.reject {
            var nextProbe = m.rejectHint
            if m.logTerm > 0 {
                // Skip past every entry of ours whose term is above the follower's term at the hint.
                nextProbe = log.findConflictByTerm(index: m.rejectHint, term: m.logTerm).index
            }
            if pr.maybeDecrTo(rejected: m.index, matchHint: nextProbe) {
                if pr.state == .replicate { pr.becomeProbe() }
                sendAppend(to: m.from)
            }
            return
        }
        let wasPaused = pr.isPaused
        guard pr.maybeUpdate(m.index) else {
            // Nothing new, but a stale snapshot state or a paused probe may now continue.
            if pr.state == .snapshot && pr.match >= pr.pendingSnapshot && pr.pendingSnapshot > 0 {
                pr.becomeProbe()
                sendAppend(to: m.from)
            }
            return
        }
        switch pr.state {
        case .probe:
            pr.becomeReplicate()
        case .snapshot where pr.match + 1 >= log.firstIndex:
            // The follower restored the snapshot (or caught up otherwise): replicate from there.
            pr.becomeProbe()
            pr.becomeReplicate()
        case .snapshot:
            break
        case .replicate:
            pr.inflights.freeLE(m.index)
        }
        if maybeCommit() {
            releasePendingReadIndexMessages()
            if !deferCommitNotice {
                broadcastAppend()
            } else if wasPaused {
                sendAppend(to: m.from)
            }
        } else if wasPaused {
            sendAppend(to: m.from)
        }
        // Pipelining: keep sending while the in-flight window has room.
        while maybeSendAppend(to: m.from, sendIfEmpty: false) {}
        if m.from == leadTransferee && pr.match == log.lastIndex {
            sendTimeoutNow(to: m.from)
        }
    }

    private func handleHeartbeatResponse(_ m: Message, _ pr: Progress) {
        pr.msgAppFlowPaused = false
        pr.heartbeatAckTick = max(pr.heartbeatAckTick, m.index)
        // The peer is alive but its answers to a full window may have been lost: let one more through.
        if pr.state == .replicate && pr.inflights.isFull { pr.inflights.freeFirstOne() }
        if pr.state == .snapshot {
            // No acknowledgement since the last heartbeat answer: a chunk was lost; resend from what
            // the follower holds.
            if pr.snapshotAcked == pr.snapshotAckedAtHeartbeat {
                pr.snapshotSent = pr.snapshotAcked
                sendSnapshotChunks(to: m.from, pr)
            }
            pr.snapshotAckedAtHeartbeat = pr.snapshotAcked
        } else if pr.match < log.lastIndex || pr.sentCommit < log.committed {
            sendAppend(to: m.from)
        }
        // Lease-based reads fall back to this round while the lease is not established.
        guard !m.context.isEmpty,
              let acks = readOnly.recvAck(from: m.from, context: m.context) else { return }
        guard tracker.config.voters.voteResult({ acks.contains($0) ? true : nil }) == .won else { return }
        for status in readOnly.advance(through: m.context) {
            answerReadIndex(status.request, index: status.index)
        }
    }

    // MARK: - Heartbeats

    func broadcastHeartbeat(context: [UInt8]?, quiesce: Bool = false) {
        for pid in tracker.memberIDs where pid != id {
            let pr = tracker.progress[pid]!
            // Never tell a follower to commit past what it is known to hold.
            let commit = min(pr.match, log.committed)
            send(Message(kind: .heartbeat, to: pid, index: leaderTicks, commit: commit, context: context ?? [],
                         quiesce: quiesce))
            pr.sentCommit = max(pr.sentCommit, commit)
        }
    }

    // MARK: - Snapshots (sent in chunks)

    /// Switches `pr` to snapshot state and sends the first chunk; false if no snapshot can be sent now.
    private func startSnapshot(to pid: NodeID, _ pr: Progress) -> Bool {
        // An inactive peer would not answer; avoid reading a large snapshot for nothing.
        guard pr.recentActive, let snapshot = try? log.snapshot(), !snapshot.isEmpty else { return false }
        pr.becomeSnapshot(index: snapshot.metadata.index, term: snapshot.metadata.term)
        sendSnapshotChunks(to: pid, pr)
        return true
    }

    /// Sends the chunks that fit the window, starting at `pr.snapshotSent`. Until the follower first
    /// answers, only one chunk is sent: it may already hold a prefix from an interrupted transfer.
    func sendSnapshotChunks(to pid: NodeID, _ pr: Progress) {
        guard let snapshot = try? log.snapshot() else { return }
        if snapshot.metadata.index != pr.pendingSnapshot || snapshot.metadata.term != pr.pendingSnapshotTerm {
            // The leader took a newer snapshot meanwhile: send that one instead.
            guard !snapshot.isEmpty else { return }
            pr.becomeSnapshot(index: snapshot.metadata.index, term: snapshot.metadata.term)
        }
        let total = UInt64(snapshot.data.count)
        let chunk = UInt64(snapshotChunkBytes)
        let window = pr.snapshotAckSeen ? chunk * UInt64(min(tracker.maxInflight, 4)) : 1
        repeat {
            let start = pr.snapshotSent
            let end = min(total, start + chunk)
            var piece = Snapshot(metadata: snapshot.metadata, data: [])
            if start < end { piece.data = Array(snapshot.data[Int(start)..<Int(end)]) }
            send(Message(kind: .snapshot, to: pid, snapshot: piece, snapshotOffset: start, snapshotTotalBytes: total))
            pr.snapshotSent = end
        } while pr.snapshotSent < total && pr.snapshotSent - pr.snapshotAcked < window
    }

    private func handleSnapshotResponse(_ m: Message, _ pr: Progress) {
        guard pr.state == .snapshot, m.index == pr.pendingSnapshot, m.logTerm == pr.pendingSnapshotTerm else { return }
        pr.snapshotAckSeen = true
        if m.reject {
            // The follower holds exactly `snapshotOffset` bytes: continue from there.
            pr.snapshotAcked = m.snapshotOffset
            pr.snapshotSent = m.snapshotOffset
        } else {
            pr.snapshotAcked = max(pr.snapshotAcked, m.snapshotOffset)
            // It held more than we sent (a resumed transfer): skip ahead.
            pr.snapshotSent = max(pr.snapshotSent, pr.snapshotAcked)
        }
        let total = UInt64((try? log.snapshot().data.count) ?? 0)
        if pr.snapshotSent < total { sendSnapshotChunks(to: m.from, pr) }
    }

    // MARK: - Reads

    func handleReadIndexRequest(_ m: Message) {
        if tracker.isSingleton {
            answerReadIndex(m, index: log.committed)
            return
        }
        // Until an entry of this term commits, the leader's commit index may be behind the group's.
        guard committedEntryInCurrentTerm else {
            pendingReadIndexMessages.append(m)
            return
        }
        confirmAndAnswerReadIndex(m)
    }

    var committedEntryInCurrentTerm: Bool { log.termOrZero(log.committed) == term }

    private func confirmAndAnswerReadIndex(_ m: Message) {
        if readOnly.option == .leaseBased && leaseHolds {
            answerReadIndex(m, index: log.committed)
            return
        }
        readOnly.addRequest(index: log.committed, m)
        _ = readOnly.recvAck(from: id, context: m.context)
        broadcastHeartbeat(context: m.context)
    }

    /// True while no other leader can have been elected: a quorum acknowledged a heartbeat sent less
    /// than `leaseTicks` ago (followers refuse votes for an election timeout after hearing from us).
    var leaseHolds: Bool {
        guard checkQuorum, !leaseRevoked, leaderTicks > 0 else { return false }
        let acked = tracker.config.voters.committedIndex { pid in
            pid == self.id ? self.leaderTicks : self.tracker.progress[pid]?.heartbeatAckTick
        }
        return acked > 0 && leaderTicks < acked + leaseTicks
    }

    func releasePendingReadIndexMessages() {
        guard !pendingReadIndexMessages.isEmpty, committedEntryInCurrentTerm else { return }
        let waiting = pendingReadIndexMessages
        pendingReadIndexMessages = []
        for m in waiting { confirmAndAnswerReadIndex(m) }
    }

    /// Answers locally (a request of this node) or to the follower that forwarded it.
    func answerReadIndex(_ request: Message, index: LogIndex) {
        if request.from == 0 || request.from == id {
            readStates.append(ReadState(index: index, requestContext: request.context))
        } else {
            send(Message(kind: .readIndexResponse, to: request.from, index: index, context: request.context))
        }
    }

    // MARK: - Leadership transfer

    func handleTransferLeader(to transferee: NodeID) {
        guard let pr = tracker.progress[transferee], !pr.isLearner else { return }
        if leadTransferee != 0 {
            if leadTransferee == transferee { return }
            abortLeaderTransfer()
        }
        if transferee == id { return }
        // The transfer must finish within an election timeout or it is abandoned.
        electionElapsed = 0
        leadTransferee = transferee
        if pr.match == log.lastIndex {
            sendTimeoutNow(to: transferee)
        } else {
            // Catch the transferee up first; its append response triggers TimeoutNow.
            sendAppend(to: transferee)
        }
    }
}
