extension Raft {
    /// Handles a message from a peer: first the term rules shared by every role, then votes, then the
    /// role's own handling.
    func step(_ m: Message) {
        wakeIfNeeded(by: m)
        if m.term == 0 {
            // A forwarded request (read index, leadership transfer): no term.
        } else if m.term > term {
            if m.kind == .vote || m.kind == .preVote {
                // Within the lease of a live leader, ignore disruptive candidates (check-quorum),
                // unless the leader itself asked for the election.
                let inLease = checkQuorum && (lead != 0 || assumeLeaseAtStart) && electionElapsed < electionTimeout
                if inLease && !m.campaignTransfer { return }
            }
            switch m.kind {
            case .preVote:
                break  // a pre-vote never changes our term
            case .preVoteResponse where !m.reject:
                break  // the term is raised only once the pre-vote is won
            case .append, .heartbeat, .snapshot:
                becomeFollower(term: m.term, lead: m.from)
            default:
                becomeFollower(term: m.term, lead: 0)
            }
        } else if m.term < term {
            if (checkQuorum || preVote) && (m.kind == .heartbeat || m.kind == .append) {
                // A stale leader (e.g. partitioned away) learns the new term and steps down; without this,
                // pre-vote and check-quorum could leave it isolated, preventing nobody and learning nothing.
                send(Message(kind: .appendResponse, to: m.from))
            } else if m.kind == .preVote {
                send(Message(kind: .preVoteResponse, to: m.from, term: term, reject: true))
            }
            return
        }

        switch m.kind {
        case .vote, .preVote:
            handleVoteRequest(m)
        default:
            switch role {
            case .leader: stepLeader(m)
            case .candidate, .preCandidate: stepCandidate(m)
            case .follower: stepFollower(m)
            }
        }
    }

    private func handleVoteRequest(_ m: Message) {
        let responseKind: MessageKind = m.kind == .vote ? .voteResponse : .preVoteResponse
        // We may vote again for the same candidate (a repeated request), vote if we have not voted and
        // know no leader, or grant a pre-vote for a future term.
        let canVote = vote == m.from || (vote == 0 && lead == 0) || (m.kind == .preVote && m.term > term)
        if canVote && log.isUpToDate(index: m.index, term: m.logTerm) {
            // The response carries the requested term, so a pre-candidate can count it.
            send(Message(kind: responseKind, to: m.from, term: m.term))
            if m.kind == .vote {
                electionElapsed = 0
                vote = m.from
            }
        } else {
            send(Message(kind: responseKind, to: m.from, term: term, reject: true))
        }
    }

    private func stepCandidate(_ m: Message) {
        let myResponse: MessageKind = role == .preCandidate ? .preVoteResponse : .voteResponse
        switch m.kind {
        case .append:
            becomeFollower(term: m.term, lead: m.from)
            handleAppend(m)
        case .heartbeat:
            becomeFollower(term: m.term, lead: m.from)
            handleHeartbeat(m)
        case .snapshot:
            becomeFollower(term: m.term, lead: m.from)
            handleSnapshotChunk(m)
        case myResponse:
            switch poll(m.from, granted: !m.reject) {
            case .won:
                if role == .preCandidate {
                    campaign(.election)
                } else {
                    becomeLeader()
                    broadcastAppend()
                }
            case .lost:
                becomeFollower(term: term, lead: 0)
            case .pending:
                break
            }
        default:
            break  // a candidate has no leader to forward to, and ignores TimeoutNow
        }
    }

    private func stepFollower(_ m: Message) {
        switch m.kind {
        case .append:
            electionElapsed = 0
            lead = m.from
            handleAppend(m)
        case .heartbeat:
            electionElapsed = 0
            lead = m.from
            handleHeartbeat(m)
        case .snapshot:
            electionElapsed = 0
            lead = m.from
            handleSnapshotChunk(m)
        case .transferLeader:
            if lead != 0 { send(Message(kind: .transferLeader, to: lead, transferee: m.transferee)) }
        case .timeoutNow:
            // The leader ordered an election; pre-vote is skipped, as the leader vouches for us.
            hup(.transfer)
        case .readIndexResponse:
            readStates.append(ReadState(index: m.index, requestContext: m.context))
        default:
            break
        }
    }

    // MARK: - Follower side of replication

    func handleAppend(_ m: Message) {
        if m.index < log.committed {
            send(Message(kind: .appendResponse, to: m.from, index: log.committed))
            return
        }
        if let lastNew = log.maybeAppend(index: m.index, logTerm: m.logTerm, commit: m.commit, entries: m.entries) {
            send(Message(kind: .appendResponse, to: m.from, index: lastNew))
            return
        }
        // Point the leader at the last entry that might match, skipping a whole term at a time.
        let hint = log.findConflictByTerm(index: min(m.index, log.lastIndex), term: m.logTerm)
        send(Message(kind: .appendResponse, to: m.from, logTerm: hint.term, index: m.index, reject: true,
                     rejectHint: hint.index))
    }

    func handleHeartbeat(_ m: Message) {
        log.commit(to: min(m.commit, log.lastIndex))
        if m.quiesce { quiesced = true }
        // `index` echoes the leader's tick stamp (its lease clock).
        send(Message(kind: .heartbeatResponse, to: m.from, index: m.index, context: m.context, quiesce: m.quiesce))
    }

    /// Accumulates snapshot chunks; restores the snapshot when it is complete.
    func handleSnapshotChunk(_ m: Message) {
        guard let chunk = m.snapshot else { return }
        let meta = chunk.metadata
        if meta.index <= log.committed {
            // Already have everything the snapshot holds.
            incomingSnapshot = nil
            send(Message(kind: .appendResponse, to: m.from, index: log.committed))
            return
        }
        let same = incomingSnapshot.map {
            $0.from == m.from && $0.metadata == meta && $0.total == m.snapshotTotalBytes
        } ?? false
        if !same {
            guard m.snapshotOffset == 0 else {
                send(Message(kind: .snapshotResponse, to: m.from, logTerm: meta.term, index: meta.index, reject: true))
                return
            }
            incomingSnapshot = (m.from, meta, m.snapshotTotalBytes, [])
            incomingSnapshot!.data.reserveCapacity(Int(m.snapshotTotalBytes))
        }
        let held = UInt64(incomingSnapshot!.data.count)
        if m.snapshotOffset > held {
            // A chunk went missing: tell the leader where to continue.
            send(Message(kind: .snapshotResponse, to: m.from, logTerm: meta.term, index: meta.index, reject: true,
                         snapshotOffset: held))
            return
        }
        let end = m.snapshotOffset + UInt64(chunk.data.count)
        if end > held {
            incomingSnapshot!.data.append(contentsOf: chunk.data[Int(held - m.snapshotOffset)...])
        }
        let total = incomingSnapshot!.total
        let now = UInt64(incomingSnapshot!.data.count)
        guard now >= total else {
            send(Message(kind: .snapshotResponse, to: m.from, logTerm: meta.term, index: meta.index, snapshotOffset: now))
            return
        }
        let complete = Snapshot(metadata: meta, data: incomingSnapshot!.data)
        incomingSnapshot = nil
        if restore(complete) {
            send(Message(kind: .appendResponse, to: m.from, index: log.lastIndex))
        } else {
            send(Message(kind: .appendResponse, to: m.from, index: log.committed))
        }
    }

    /// Replaces the log with the snapshot unless it holds nothing new; returns whether it did.
    func restore(_ s: Snapshot) -> Bool {
        let meta = s.metadata
        if meta.index <= log.committed { return false }
        if role != .follower {
            becomeFollower(term: term + 1, lead: 0)
            return false
        }
        // The snapshot may predate this node's addition (the leader sends us a snapshot because it
        // counts us as a member); the entries that follow it add us, so it is not refused for that.
        let cs = meta.confState
        if log.matchTerm(meta.index, meta.term) {
            // Our log already has the snapshot's last entry: just fast-forward the commit.
            log.commit(to: meta.index)
            return false
        }
        guard let (cfg, prs) = try? ConfChanger.restore(cs, tracker: tracker, lastIndex: meta.index) else {
            return false
        }
        log.restore(s)
        _ = switchToConfig(cfg, prs)
        return true
    }
}
