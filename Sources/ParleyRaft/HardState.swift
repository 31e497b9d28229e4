/// The state a node must persist before it sends messages that depend on it.
public struct HardState: Sendable, Hashable {
    public var term: Term
    /// The candidate this node voted for in `term` (0 = none).
    public var vote: NodeID
    /// Highest index known to be committed.
    public var commit: LogIndex

    public init(term: Term = 0, vote: NodeID = 0, commit: LogIndex = 0) {
        self.term = term
        self.vote = vote
        self.commit = commit
    }

    /// True for the state of a node that has never taken part in an election.
    public var isEmpty: Bool { term == 0 && vote == 0 && commit == 0 }
}

/// A node's role in the group.
public enum Role: Sendable, Hashable {
    case follower, preCandidate, candidate, leader
}

/// Volatile state that the application may want to observe (not persisted).
public struct SoftState: Sendable, Hashable {
    /// The leader this node knows of (0 = none).
    public var leader: NodeID
    public var role: Role

    public init(leader: NodeID, role: Role) {
        self.leader = leader
        self.role = role
    }
}
