/// The result of counting votes.
enum VoteResult: Equatable {
    case pending, lost, won
}

/// A set of voters deciding by simple majority.
struct MajorityConfig: Equatable {
    /// Sorted, without repeats.
    private(set) var ids: [NodeID] = []

    init(_ ids: [NodeID] = []) {
        self.ids = Array(Set(ids)).sorted()
    }

    var isEmpty: Bool { ids.isEmpty }
    var count: Int { ids.count }
    func contains(_ id: NodeID) -> Bool { ids.contains(id) }

    mutating func insert(_ id: NodeID) {
        if !contains(id) { ids.append(id); ids.sort() }
    }

    mutating func remove(_ id: NodeID) {
        ids.removeAll { $0 == id }
    }

    /// The highest index held by a majority. An empty config commits everything, so a joint config
    /// with an empty half is decided by the other.
    func committedIndex(_ matchOf: (NodeID) -> LogIndex?) -> LogIndex {
        if ids.isEmpty { return .max }
        var matches = ids.map { matchOf($0) ?? 0 }
        matches.sort(by: >)
        return matches[ids.count / 2]
    }

    func voteResult(_ voteOf: (NodeID) -> Bool?) -> VoteResult {
        if ids.isEmpty { return .won }
        var yes = 0, missing = 0
        for id in ids {
            switch voteOf(id) {
            case .some(true): yes += 1
            case .some(false): break
            case .none: missing += 1
            }
        }
        let quorum = ids.count / 2 + 1
        if yes >= quorum { return .won }
        if yes + missing >= quorum { return .pending }
        return .lost
    }
}

/// The incoming and the outgoing voters of a (possibly joint) configuration; decisions need both.
struct JointConfig: Equatable {
    var incoming = MajorityConfig()
    var outgoing = MajorityConfig()

    var isJoint: Bool { !outgoing.isEmpty }

    func contains(_ id: NodeID) -> Bool { incoming.contains(id) || outgoing.contains(id) }

    /// Every voter of either half, sorted.
    var ids: [NodeID] { Array(Set(incoming.ids + outgoing.ids)).sorted() }

    func committedIndex(_ matchOf: (NodeID) -> LogIndex?) -> LogIndex {
        min(incoming.committedIndex(matchOf), outgoing.committedIndex(matchOf))
    }

    func voteResult(_ voteOf: (NodeID) -> Bool?) -> VoteResult {
        let a = incoming.voteResult(voteOf), b = outgoing.voteResult(voteOf)
        if a == b { return a }
        if a == .lost || b == .lost { return .lost }
        return .pending
    }
}
