/// Why a configuration change cannot be applied.
struct ConfChangeError: Error, Equatable {
    var reason: String
}

/// Computes the configuration that results from a change, checking the rules of joint consensus.
/// Works on copies; the caller installs the result.
struct ConfChanger {
    let tracker: ProgressTracker
    let lastIndex: LogIndex

    typealias Result = (TrackerConfig, [NodeID: Progress])

    /// Applies `cc` as it would be applied from the log.
    func apply(_ cc: ConfChange) throws -> Result {
        if cc.isLeaveJoint { return try leaveJoint() }
        if let autoLeave = cc.jointAutoLeave { return try enterJoint(autoLeave: autoLeave, cc.changes) }
        return try simple(cc.changes)
    }

    func enterJoint(autoLeave: Bool, _ changes: [ConfChangeSingle]) throws -> Result {
        var (cfg, prs) = copy()
        if cfg.voters.isJoint { throw ConfChangeError(reason: "configuration is already joint") }
        if cfg.voters.incoming.isEmpty { throw ConfChangeError(reason: "cannot make a zero-voter configuration joint") }
        cfg.voters.outgoing = cfg.voters.incoming
        try applyChanges(&cfg, &prs, changes)
        cfg.autoLeave = autoLeave
        return try checked(cfg, prs)
    }

    func leaveJoint() throws -> Result {
        var (cfg, prs) = copy()
        if !cfg.voters.isJoint { throw ConfChangeError(reason: "configuration is not joint") }
        for id in cfg.learnersNext {
            insertSorted(&cfg.learners, id)
            prs[id]?.isLearner = true
        }
        cfg.learnersNext = []
        for id in cfg.voters.outgoing.ids where !cfg.voters.incoming.contains(id) && !cfg.learners.contains(id) {
            prs[id] = nil
        }
        cfg.voters.outgoing = MajorityConfig()
        cfg.autoLeave = false
        return try checked(cfg, prs)
    }

    func simple(_ changes: [ConfChangeSingle]) throws -> Result {
        var (cfg, prs) = copy()
        if cfg.voters.isJoint { throw ConfChangeError(reason: "cannot apply a simple change in a joint configuration") }
        try applyChanges(&cfg, &prs, changes)
        let before = Set(tracker.config.voters.incoming.ids), after = Set(cfg.voters.incoming.ids)
        if before.symmetricDifference(after).count > 1 {
            throw ConfChangeError(reason: "more than one voter changed without entering a joint configuration")
        }
        return try checked(cfg, prs)
    }

    /// Rebuilds the configuration of a snapshot's `ConfState` from scratch, one simple step at a time.
    static func restore(_ cs: ConfState, tracker: ProgressTracker, lastIndex: LogIndex) throws -> Result {
        var t = tracker
        t.replace(config: TrackerConfig(), progress: [:])
        func step(_ f: (ConfChanger) throws -> Result) throws {
            let (cfg, prs) = try f(ConfChanger(tracker: t, lastIndex: lastIndex))
            t.replace(config: cfg, progress: prs)
        }
        var incoming: [ConfChangeSingle] = []
        for id in cs.votersOutgoing {
            try step { try $0.simple([ConfChangeSingle(type: .addVoter, node: id)]) }
            incoming.append(ConfChangeSingle(type: .removeNode, node: id))
        }
        incoming += cs.voters.map { ConfChangeSingle(type: .addVoter, node: $0) }
        incoming += cs.learners.map { ConfChangeSingle(type: .addLearner, node: $0) }
        incoming += cs.learnersNext.map { ConfChangeSingle(type: .addLearner, node: $0) }
        if cs.votersOutgoing.isEmpty {
            for change in incoming { try step { try $0.simple([change]) } }
        } else {
            try step { try $0.enterJoint(autoLeave: cs.autoLeave, incoming) }
        }
        return (t.config, t.progress)
    }

    private func copy() -> Result {
        (tracker.config, tracker.progress.mapValues { $0.copy() })
    }

    private func applyChanges(_ cfg: inout TrackerConfig, _ prs: inout [NodeID: Progress],
                              _ changes: [ConfChangeSingle]) throws {
        for change in changes where change.node != 0 {
            switch change.type {
            case .addVoter: makeVoter(&cfg, &prs, change.node)
            case .addLearner: makeLearner(&cfg, &prs, change.node)
            case .removeNode: remove(&cfg, &prs, change.node)
            }
        }
        if cfg.voters.incoming.isEmpty { throw ConfChangeError(reason: "removed all voters") }
    }

    private func makeVoter(_ cfg: inout TrackerConfig, _ prs: inout [NodeID: Progress], _ id: NodeID) {
        guard let pr = prs[id] else {
            initProgress(&cfg, &prs, id, isLearner: false)
            return
        }
        pr.isLearner = false
        cfg.learners.removeAll { $0 == id }
        cfg.learnersNext.removeAll { $0 == id }
        cfg.voters.incoming.insert(id)
    }

    private func makeLearner(_ cfg: inout TrackerConfig, _ prs: inout [NodeID: Progress], _ id: NodeID) {
        guard let pr = prs[id] else {
            initProgress(&cfg, &prs, id, isLearner: true)
            return
        }
        if pr.isLearner { return }
        remove(&cfg, &prs, id)
        prs[id] = pr  // keep the replication progress
        // A voter of the outgoing half stays a voter until the joint configuration is left.
        if cfg.voters.outgoing.contains(id) {
            insertSorted(&cfg.learnersNext, id)
        } else {
            pr.isLearner = true
            insertSorted(&cfg.learners, id)
        }
    }

    private func remove(_ cfg: inout TrackerConfig, _ prs: inout [NodeID: Progress], _ id: NodeID) {
        guard prs[id] != nil else { return }
        cfg.voters.incoming.remove(id)
        cfg.learners.removeAll { $0 == id }
        cfg.learnersNext.removeAll { $0 == id }
        if !cfg.voters.outgoing.contains(id) { prs[id] = nil }
    }

    private func initProgress(_ cfg: inout TrackerConfig, _ prs: inout [NodeID: Progress], _ id: NodeID,
                              isLearner: Bool) {
        if isLearner { insertSorted(&cfg.learners, id) } else { cfg.voters.incoming.insert(id) }
        // Probing from the last index finds the peer's position quickly for a fresh or a known peer.
        prs[id] = Progress(match: 0, next: max(lastIndex, 1),
                           inflights: Inflights(capacity: tracker.maxInflight, maxBytes: tracker.maxInflightBytes),
                           isLearner: isLearner, recentActive: true)
    }

    private func checked(_ cfg: TrackerConfig, _ prs: [NodeID: Progress]) throws -> Result {
        for id in cfg.voters.ids where prs[id] == nil { throw ConfChangeError(reason: "no progress for voter \(id)") }
        for id in cfg.learners + cfg.learnersNext where prs[id] == nil {
            throw ConfChangeError(reason: "no progress for learner \(id)")
        }
        for id in cfg.learners where cfg.voters.contains(id) {
            throw ConfChangeError(reason: "\(id) is both voter and learner")
        }
        for id in cfg.learnersNext where !cfg.voters.outgoing.contains(id) {
            throw ConfChangeError(reason: "\(id) is in learnersNext but not an outgoing voter")
        }
        if !cfg.voters.isJoint && (!cfg.learnersNext.isEmpty || cfg.autoLeave) {
            throw ConfChangeError(reason: "learnersNext or autoLeave set outside a joint configuration")
        }
        return (cfg, prs)
    }
}

func insertSorted(_ ids: inout [NodeID], _ id: NodeID) {
    if !ids.contains(id) { ids.append(id); ids.sort() }
}
