import ParleyRaft
import ParleyWire

/// A broken invariant: which one, and the evidence.
public struct InvariantViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// Short name of the invariant (e.g. "election safety").
    public var invariant: String
    public var detail: String

    public init(_ invariant: String, _ detail: String) {
        self.invariant = invariant
        self.detail = detail
    }

    public var description: String { "\(invariant): \(detail)" }
}

/// The global view of every node's log and state machine, checked on each observation
/// (the safety properties of the Raft paper, Figure 3, plus monotonic commit/apply).
struct SafetyMonitor {
    private struct EntryShape: Hashable {
        var previousTerm: Term
        var digest: UInt64
    }

    private struct EntryID: Hashable {
        var index: LogIndex
        var term: Term
    }

    private struct CommittedEntry {
        var term: Term
        var digest: UInt64
        var node: NodeID
        /// The lowest current term of a node when it applied the entry: the entry was committed in this
        /// term or earlier, so every leader of a later term must hold it.
        var committedBy: Term
    }

    private var leaderOfTerm: [Term: NodeID] = [:]
    private var shapes: [EntryID: EntryShape] = [:]
    private var committed: [LogIndex: CommittedEntry] = [:]
    private var highestCommitted: LogIndex = 0
    /// Digest of the state machine after applying each index, from whichever node applied it first.
    private var stateAfter: [LogIndex: UInt64] = [:]
    private(set) var leadersElected = 0

    static func digest(_ entry: Entry) -> UInt64 {
        StableDigest.of(entry.data, seed: 0xCBF2_9CE4_8422_2325 ^ UInt64(entry.kind.rawValue))
    }

    /// Election safety (at most one leader per term) and leader completeness (a new leader's log holds
    /// every entry known to be committed in an earlier term; a leader counting late vote answers may be
    /// elected for a term older than some commits). `termAt` reads the leader's log (nil: compacted).
    mutating func observeLeader(_ node: NodeID, term: Term, firstIndex: LogIndex, lastIndex: LogIndex,
                                termAt: (LogIndex) -> Term?) throws(InvariantViolation) {
        if let other = leaderOfTerm[term] {
            guard other == node else {
                throw InvariantViolation("election safety", "nodes \(other) and \(node) both leader in term \(term)")
            }
            return
        }
        leaderOfTerm[term] = node
        leadersElected += 1
        guard highestCommitted >= firstIndex else { return }
        for index in firstIndex...highestCommitted {
            guard let entry = committed[index], entry.committedBy < term else { continue }
            guard index <= lastIndex else {
                throw InvariantViolation("leader completeness", "leader \(node) of term \(term) has last index "
                    + "\(lastIndex) but entry \(index) (term \(entry.term)) was committed (applied by \(entry.node))")
            }
            let held = termAt(index)
            guard held == nil || held == entry.term else {
                throw InvariantViolation("leader completeness", "leader \(node) of term \(term) holds term "
                    + "\(held!) at \(index); committed entry there has term \(entry.term) (applied by \(entry.node))")
            }
        }
    }

    /// Log matching: two logs holding an entry with the same index and term hold the same entry and agree
    /// on the entry before it (so, by induction, on the whole prefix).
    mutating func observeAppend(_ node: NodeID, entry: Entry, previousTerm: Term?) throws(InvariantViolation) {
        let digest = Self.digest(entry)
        guard let previousTerm else { return }
        let id = EntryID(index: entry.index, term: entry.term)
        let shape = EntryShape(previousTerm: previousTerm, digest: digest)
        if let known = shapes[id] {
            guard known == shape else {
                throw InvariantViolation("log matching", "node \(node) holds index \(entry.index) term \(entry.term) "
                    + "with previous term \(previousTerm) / digest \(digest), another log has previous term "
                    + "\(known.previousTerm) / digest \(known.digest)")
            }
        } else {
            shapes[id] = shape
        }
    }

    /// State machine safety: no two nodes apply different entries at one index, nor reach different states.
    mutating func observeApply(_ node: NodeID, entry: Entry, currentTerm: Term, stateDigest: UInt64)
        throws(InvariantViolation) {
        let digest = Self.digest(entry)
        if let known = committed[entry.index] {
            guard known.term == entry.term, known.digest == digest else {
                throw InvariantViolation("state machine safety", "node \(node) applied index \(entry.index) "
                    + "term \(entry.term); node \(known.node) applied term \(known.term) there (digests "
                    + "\(digest) vs \(known.digest))")
            }
            committed[entry.index]!.committedBy = min(known.committedBy, currentTerm)
        } else {
            committed[entry.index] = CommittedEntry(term: entry.term, digest: digest, node: node, committedBy: currentTerm)
            highestCommitted = max(highestCommitted, entry.index)
        }
        try observeState(node, index: entry.index, stateDigest: stateDigest, how: "after applying")
    }

    /// A state machine restored from a snapshot must equal the state others reached at that index.
    mutating func observeState(_ node: NodeID, index: LogIndex, stateDigest: UInt64, how: String)
        throws(InvariantViolation) {
        if let known = stateAfter[index] {
            guard known == stateDigest else {
                throw InvariantViolation("state machine safety", "node \(node) state \(how) index \(index) "
                    + "differs from another node's state at that index")
            }
        } else {
            stateAfter[index] = stateDigest
        }
    }
}
