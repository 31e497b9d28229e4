/// Issue 17, replica moves: the next membership step a shard's leader takes toward the replicas the meta
/// placement table names for the shard. Pure, so every step and every crash point is a unit test; the
/// leader asks again after each change applies, and after a crash or a new leader the state it asks from
/// (the applied configuration and the table) is durable, so a move resumes where it stood.
///
/// The order is CockroachDB's and TiKV's: a new replica joins as a learner and is filled by a snapshot that
/// names it; once caught up it is promoted and an old voter removed in one joint change (so the group never
/// has fewer voters than it had); a leader that is the one leaving hands its leadership to a staying voter
/// first.
public enum ReplicaMoves {
    /// A group's membership as its leader sees it.
    public struct Membership: Sendable, Hashable {
        public var shard: Int
        public var conf: ConfState
        public var commit: LogIndex
        /// Each member's acknowledged log index (the leader's own is its last index).
        public var match: [NodeID: LogIndex]
        /// A configuration change is proposed and not yet applied (Raft takes one at a time).
        public var changePending: Bool
        public var transferring: Bool

        public init(shard: Int, conf: ConfState, commit: LogIndex, match: [NodeID: LogIndex],
                    changePending: Bool = false, transferring: Bool = false) {
            self.shard = shard
            self.conf = conf
            self.commit = commit
            self.match = match
            self.changePending = changePending
            self.transferring = transferring
        }

        /// What `node`, the leader, knows of its group now.
        public init(shard: Int, leader node: RawNode, conf: ConfState) {
            let s = node.status
            self.init(shard: shard, conf: conf, commit: s.hardState.commit, match: s.progress.mapValues(\.match),
                      changePending: node.hasPendingConfChange, transferring: s.leadTransferee != 0)
        }
    }

    public enum Step: Sendable, Hashable {
        case none
        /// Wait: a change is still applying, a transfer is under way, or a learner is catching up.
        case wait(String)
        case leaveJoint
        case addLearner(NodeID)
        /// Promote a caught-up learner and, when one must go, remove a voter in the same joint change.
        case promote(NodeID, removing: NodeID?)
        case remove(NodeID)
        case transferLeadership(to: NodeID)

        public var change: ConfChange? {
            switch self {
            case .leaveJoint: return .leaveJoint
            case .addLearner(let n): return ConfChange(changes: [ConfChangeSingle(type: .addLearner, node: n)])
            case .promote(let n, let removing):
                var changes = [ConfChangeSingle(type: .addVoter, node: n)]
                if let removing { changes.append(ConfChangeSingle(type: .removeNode, node: removing)) }
                return ConfChange(transition: .auto, changes: changes)
            case .remove(let n): return ConfChange(changes: [ConfChangeSingle(type: .removeNode, node: n)])
            case .none, .wait, .transferLeadership: return nil
            }
        }
    }

    /// - Parameters:
    ///   - leader: this node (the shard's leader).
    ///   - target: the replicas the placement table names (empty: no table yet, nothing moves).
    ///   - mayAddLearner: the node's move budget allows one more replica in flight.
    public static func next(leader: NodeID, membership m: Membership, target: [NodeID],
                            mayAddLearner: Bool = true) -> Step {
        let conf = m.conf
        guard !target.isEmpty else { return .none }
        if m.transferring { return .wait("leadership transfer under way") }
        if m.changePending { return .wait("a configuration change is applying") }
        if conf.isJoint { return conf.autoLeave ? .wait("leaving the joint configuration") : .leaveJoint }
        let want = Set(target)
        let voters = Set(conf.voters)
        let learners = Set(conf.learners)
        // A learner no longer wanted (the table changed while it caught up) goes first.
        if let stray = learners.subtracting(want).min() { return .remove(stray) }
        let caughtUp = { (n: NodeID) in (m.match[n] ?? 0) >= m.commit && m.commit > 0 }
        let leaving = voters.subtracting(want)
        // A wanted learner that has caught up is promoted, taking an unwanted voter's place.
        if let ready = learners.intersection(want).filter(caughtUp).min() {
            if let out = leaving.subtracting([leader]).min() { return .promote(ready, removing: out) }
            if leaving.contains(leader) {
                // The leader is the voter to go: it hands over to a staying voter that is caught up first.
                if let heir = voters.intersection(want).filter(caughtUp).min() { return .transferLeadership(to: heir) }
                return .promote(ready, removing: nil)
            }
            return .promote(ready, removing: nil)
        }
        if let missing = want.subtracting(voters).subtracting(learners).min() {
            return mayAddLearner ? .addLearner(missing) : .wait("move budget: replica \(missing) waits")
        }
        if !learners.intersection(want).isEmpty { return .wait("a learner is catching up") }
        // Every wanted node votes; voters beyond the table go, never below the table's count.
        if !leaving.isEmpty, voters.count > want.count {
            if let out = leaving.subtracting([leader]).min() { return .remove(out) }
            if let heir = voters.intersection(want).filter(caughtUp).min() { return .transferLeadership(to: heir) }
            return .wait("no caught-up voter to hand leadership to")
        }
        return .none
    }
}

extension ReplicaMoves.Step: CustomStringConvertible {
    /// How `/status` shows the step a move is at.
    public var description: String {
        switch self {
        case .none: return "none"
        case .wait(let why): return "waiting: \(why)"
        case .leaveJoint: return "leave the joint configuration"
        case .addLearner(let n): return "add node \(n) as a learner"
        case .promote(let n, let removing?): return "promote node \(n), remove node \(removing) (joint change)"
        case .promote(let n, nil): return "promote node \(n)"
        case .remove(let n): return "remove node \(n)"
        case .transferLeadership(let n): return "hand leadership to node \(n)"
        }
    }
}

extension ReplicaMoves {
    /// What one applied configuration change did to the moves of a group, for the move counters: a learner
    /// added starts a move, a learner becoming a voter finishes one, a learner removed without having voted
    /// is a move that failed (the table changed while it caught up, or it was abandoned).
    public struct Transition: Sendable, Hashable {
        public var started: [NodeID] = []
        public var done: [NodeID] = []
        public var failed: [NodeID] = []

        public init(from old: ConfState, to new: ConfState) {
            let oldLearners = Set(old.learners)
            let newLearners = Set(new.learners)
            let newVoters = Set(new.voters).union(new.votersOutgoing)
            let oldVoters = Set(old.voters).union(old.votersOutgoing)
            // A voter demoted on leaving a joint configuration (learnersNext) is no new move.
            started = newLearners.subtracting(oldLearners).subtracting(oldVoters).sorted()
            done = oldLearners.intersection(newVoters).sorted()
            failed = oldLearners.subtracting(newLearners).subtracting(newVoters).sorted()
        }
    }
}
