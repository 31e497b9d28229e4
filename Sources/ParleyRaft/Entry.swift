/// Identifies a member of a Raft group. `0` means "none".
public typealias NodeID = UInt64
/// A Raft term: a logical clock that increases with every election.
public typealias Term = UInt64
/// The position of an entry in the replicated log (the first real entry has index 1).
public typealias LogIndex = UInt64

/// What an entry's payload holds.
public enum EntryKind: UInt8, Sendable {
    /// An application command.
    case normal
    /// An encoded `ConfChange`; the application calls `RawNode.applyConfChange` when it applies it.
    case confChange
}

/// One entry of the replicated log.
public struct Entry: Sendable, Hashable {
    public var term: Term
    public var index: LogIndex
    public var kind: EntryKind
    public var data: [UInt8]

    public init(term: Term, index: LogIndex, kind: EntryKind = .normal, data: [UInt8] = []) {
        self.term = term
        self.index = index
        self.kind = kind
        self.data = data
    }

    /// Approximate encoded size, used for message size and in-flight byte limits.
    @inlinable public var byteSize: Int { data.count + 24 }
}

extension Collection where Element == Entry {
    /// Sum of `byteSize` over the entries.
    @inlinable public var byteSize: Int { reduce(0) { $0 + $1.byteSize } }
    /// Sum of payload sizes; what the uncommitted-proposal cap counts (empty entries are free).
    @inlinable public var payloadSize: Int { reduce(0) { $0 + $1.data.count } }
}
