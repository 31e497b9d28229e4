extension Raft {
    /// Applies a committed configuration change. A change that is invalid in the current configuration
    /// is ignored (every replica ignores it alike, as they all hold the same configuration).
    func applyConfChange(_ cc: ConfChange) -> ConfState {
        let changer = ConfChanger(tracker: tracker, lastIndex: log.lastIndex)
        guard let (cfg, prs) = try? changer.apply(cc) else { return tracker.confState }
        return switchToConfig(cfg, prs)
    }

    /// Installs a configuration and reacts to it: a removed leader steps down, a leader whose quorum
    /// changed may commit, new peers get probed.
    func switchToConfig(_ cfg: TrackerConfig, _ prs: [NodeID: Progress]) -> ConfState {
        tracker.replace(config: cfg, progress: prs)
        let cs = tracker.confState
        let own = tracker.progress[id]
        isLearner = own?.isLearner ?? false
        if (own == nil || isLearner) && role == .leader {
            if stepDownOnRemoval {
                handOverBeforeStepDown()
                becomeFollower(term: term, lead: 0)
            }
            return cs
        }
        guard role == .leader, !cs.voters.isEmpty else { return cs }
        if maybeCommit() {
            releasePendingReadIndexMessages()
            broadcastAppend()
        } else {
            for pid in tracker.memberIDs where pid != id { maybeSendAppend(to: pid, sendIfEmpty: false) }
        }
        if leadTransferee != 0 && !tracker.config.voters.contains(leadTransferee) { abortLeaderTransfer() }
        return cs
    }

    /// A leader that removed itself asks the first up-to-date voter to campaign at once, so the group
    /// does not wait an election timeout for a new leader.
    private func handOverBeforeStepDown() {
        let last = log.lastIndex
        for pid in tracker.config.voters.ids where pid != id {
            if let pr = tracker.progress[pid], pr.match == last {
                sendTimeoutNow(to: pid)
                return
            }
        }
    }

    /// Records that the application applied everything up to `index`; a leader in a joint configuration
    /// with auto-leave then proposes leaving it.
    func appliedTo(_ index: LogIndex) {
        log.applied(to: index)
        guard role == .leader, tracker.config.autoLeave, log.applied >= pendingConfIndex else { return }
        let leave = Entry(term: 0, index: 0, kind: .confChange, data: ConfChange.leaveJoint.encoded())
        if appendEntries([leave], checkCap: false) {
            pendingConfIndex = log.lastIndex
            broadcastPending = true
        }
    }
}
