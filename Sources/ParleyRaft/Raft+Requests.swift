extension Raft {
    /// Checks that this node may take a proposal now.
    private func checkCanPropose() throws {
        guard role == .leader else { throw RaftError.notLeader(leader: lead) }
        guard tracker.progress[id] != nil else {
            throw RaftError.proposalDropped(reason: "this leader is no longer in the configuration")
        }
        guard leadTransferee == 0 else { throw RaftError.transferInProgress }
    }

    /// Appends application commands as leader; they are broadcast when the next `Ready` is built. A follower
    /// with `forwardProposals` passes them to the leader it knows instead.
    func propose(_ payloads: [[UInt8]]) throws {
        wake()
        let ents = payloads.map { Entry(term: 0, index: 0, kind: .normal, data: $0) }
        if forwardProposals, role == .follower, lead != 0 {
            // Stamped with the term whose leader it is meant for: only that leader appends it, so a proposer
            // that sees an entry of a later term apply knows a proposal it passed on without seeing it
            // apply never will.
            send(Message(kind: .propose, to: lead, logTerm: term, entries: ents))
            return
        }
        try checkCanPropose()
        guard appendEntries(ents, checkCap: true) else { throw RaftError.proposalsOverUncommittedCap }
        broadcastPending = true
    }

    /// A leader takes proposals a follower forwarded; when it cannot (stepping down, over the uncommitted
    /// cap, transferring leadership) they are dropped and the proposer's timeout answers for them. One meant
    /// for the leader of another term is dropped too (zero: from a node that does not stamp them).
    func handleForwardedProposal(_ m: Message) {
        // `RawNode.step` refused any `.propose` that is not unindexed normal entries.
        guard m.logTerm == 0 || m.logTerm == term, (try? checkCanPropose()) != nil else { return }
        if appendEntries(m.entries, checkCap: true) { broadcastPending = true }
    }

    /// Appends a configuration change after checking it against the current configuration.
    func proposeConfChange(_ cc: ConfChange) throws {
        wake()
        try checkCanPropose()
        if pendingConfIndex > log.applied {
            throw RaftError.proposalDropped(
                reason: "configuration change at index \(pendingConfIndex) is not applied yet (applied \(log.applied))")
        }
        do {
            _ = try ConfChanger(tracker: tracker, lastIndex: log.lastIndex).apply(cc)
        } catch let error as ConfChangeError {
            throw RaftError.proposalDropped(reason: error.reason)
        }
        let entry = Entry(term: 0, index: 0, kind: .confChange, data: cc.encoded())
        guard appendEntries([entry], checkCap: true) else { throw RaftError.proposalsOverUncommittedCap }
        pendingConfIndex = log.lastIndex
        broadcastPending = true
    }

    func readIndex(_ context: [UInt8]) {
        wake()
        if role == .leader {
            handleReadIndexRequest(Message(kind: .readIndex, context: context))
        } else if lead != 0 {
            send(Message(kind: .readIndex, to: lead, context: context))
        }
    }

    func transferLeadership(to transferee: NodeID) {
        wake()
        if role == .leader {
            handleTransferLeader(to: transferee)
        } else if lead != 0 {
            send(Message(kind: .transferLeader, to: lead, transferee: transferee))
        }
    }

    func reportUnreachable(_ pid: NodeID) {
        wake()
        guard role == .leader, let pr = tracker.progress[pid] else { return }
        // Messages may have been lost: stop streaming and probe again.
        if pr.state == .replicate { pr.becomeProbe() }
    }

    /// The transport reached `pid` again (a partition healed, the peer came back). A replica that knows no
    /// leader and shares its group with `pid` starts a pre-election now rather than at its next election
    /// timeout, so a group that lost its quorum has a leader within a round trip or two of the heal instead
    /// of up to two election timeouts later. Only with pre-vote: a peer that still hears from a leader
    /// refuses the pre-vote, so this never raises a term or deposes anyone.
    func reportReachable(_ pid: NodeID) {
        guard preVote, role != .leader, lead == 0, pid != id, tracker.progress[pid] != nil else { return }
        wake(notifyLeader: false)
        hup(.preElection)
    }

    func reportSnapshot(_ pid: NodeID, success: Bool) {
        guard role == .leader, let pr = tracker.progress[pid], pr.state == .snapshot else { return }
        if !success { pr.pendingSnapshot = 0 }
        pr.becomeProbe()
        // Wait for a heartbeat answer before probing, as the peer may be down.
        pr.msgAppFlowPaused = true
    }

    // MARK: - Quiescence

    /// The leader may go quiet: nothing proposed for `quiesceAfterTicks`, every member holds the whole
    /// log, everything is committed and applied, and no read or transfer is under way.
    var canQuiesce: Bool {
        guard let after = quiesceAfterTicks, role == .leader, idleTicks >= after else { return false }
        guard leadTransferee == 0, readOnly.isEmpty, pendingReadIndexMessages.isEmpty, !broadcastPending else {
            return false
        }
        let last = log.lastIndex
        guard log.committed == last, log.applied == last else { return false }
        return tracker.memberIDs.allSatisfy { tracker.progress[$0]!.match == last }
    }

    /// Sends a last heartbeat telling followers to stop their election timers, then stops ticking.
    func quiesce() {
        broadcastHeartbeat(context: nil, quiesce: true)
        quiesced = true
    }

    /// Any message except the quiesce heartbeat (and its echo) wakes a quiet node.
    func wakeIfNeeded(by m: Message) {
        guard quiesced else { return }
        if m.quiesce && (m.kind == .heartbeat || m.kind == .heartbeatResponse) && m.term == term { return }
        wake(notifyLeader: m.from != lead)
    }

    /// Resumes ticking. A follower tells its leader (with an ordinary heartbeat answer) so that a live
    /// leader resumes heartbeats instead of the follower timing out and forcing an election.
    func wake(notifyLeader: Bool = true) {
        guard quiesced else { return }
        quiesced = false
        idleTicks = 0
        electionElapsed = 0
        heartbeatElapsed = 0
        if role == .leader {
            // Liveness must be heard afresh (and the lease re-earned) after a quiet spell.
            for pid in tracker.memberIDs where pid != id {
                tracker.progress[pid]!.recentActive = false
                tracker.progress[pid]!.heartbeatAckTick = 0
            }
        } else if notifyLeader && lead != 0 && lead != id {
            send(Message(kind: .heartbeatResponse, to: lead))
        }
    }
}
