/// The membership as the core uses it: voters (possibly joint), learners, and learners-to-be.
struct TrackerConfig: Equatable {
    var voters = JointConfig()
    /// Sorted.
    var learners: [NodeID] = []
    /// Outgoing voters that become learners on leaving the joint configuration. Sorted.
    var learnersNext: [NodeID] = []
    var autoLeave = false

    var confState: ConfState {
        ConfState(voters: voters.incoming.ids, votersOutgoing: voters.outgoing.ids, learners: learners,
                  learnersNext: learnersNext, autoLeave: autoLeave)
    }
}

/// Per-peer progress plus the votes of the current election, for one configuration.
struct ProgressTracker {
    var config = TrackerConfig()
    /// Every member (voters and learners) has an entry.
    var progress: [NodeID: Progress] = [:]
    /// Members in ascending order, so iteration (and so message order) is deterministic.
    private(set) var memberIDs: [NodeID] = []
    var votes: [NodeID: Bool] = [:]
    let maxInflight: Int
    let maxInflightBytes: Int

    init(maxInflight: Int, maxInflightBytes: Int) {
        self.maxInflight = maxInflight
        self.maxInflightBytes = maxInflightBytes
    }

    mutating func replace(config: TrackerConfig, progress: [NodeID: Progress]) {
        self.config = config
        self.progress = progress
        memberIDs = progress.keys.sorted()
    }

    var isSingleton: Bool { config.voters.incoming.count == 1 && !config.voters.isJoint }

    func committedIndex() -> LogIndex {
        config.voters.committedIndex { progress[$0]?.match }
    }

    mutating func resetVotes() { votes = [:] }

    mutating func recordVote(_ id: NodeID, granted: Bool) {
        if votes[id] == nil { votes[id] = granted }
    }

    func tallyVotes() -> (granted: Int, rejected: Int, result: VoteResult) {
        var granted = 0, rejected = 0
        for id in memberIDs where !(progress[id]?.isLearner ?? true) {
            switch votes[id] {
            case .some(true): granted += 1
            case .some(false): rejected += 1
            case .none: break
            }
        }
        return (granted, rejected, config.voters.voteResult { votes[$0] })
    }

    /// True if a quorum of voters was heard from recently.
    func quorumActive() -> Bool {
        config.voters.voteResult { id in progress[id].map { $0.recentActive } } == .won
    }

    var confState: ConfState { config.confState }
}
