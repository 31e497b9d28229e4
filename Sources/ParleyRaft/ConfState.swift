/// The membership of a group as of some log index: voters, learners and, while in a joint configuration,
/// the outgoing voters. All arrays are kept sorted.
public struct ConfState: Sendable, Hashable {
    /// Voters of the incoming (or only) configuration.
    public var voters: [NodeID]
    /// Voters of the outgoing configuration; non-empty means the group is in a joint configuration.
    public var votersOutgoing: [NodeID]
    /// Non-voting members that receive the log.
    public var learners: [NodeID]
    /// Outgoing voters that become learners when the joint configuration is left.
    public var learnersNext: [NodeID]
    /// Whether the leader leaves the joint configuration by itself once it is applied.
    public var autoLeave: Bool

    public init(voters: [NodeID] = [], votersOutgoing: [NodeID] = [], learners: [NodeID] = [],
                learnersNext: [NodeID] = [], autoLeave: Bool = false) {
        self.voters = voters.sorted()
        self.votersOutgoing = votersOutgoing.sorted()
        self.learners = learners.sorted()
        self.learnersNext = learnersNext.sorted()
        self.autoLeave = autoLeave
    }

    /// True while in a joint configuration.
    public var isJoint: Bool { !votersOutgoing.isEmpty }

    /// Every member, voter or learner, sorted and without repeats.
    public var allMembers: [NodeID] {
        Array(Set(voters + votersOutgoing + learners + learnersNext)).sorted()
    }
}
