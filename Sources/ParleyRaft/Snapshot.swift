/// Where a snapshot sits in the log and the membership as of that point.
public struct SnapshotMetadata: Sendable, Hashable {
    public var index: LogIndex
    public var term: Term
    public var confState: ConfState

    public init(index: LogIndex = 0, term: Term = 0, confState: ConfState = ConfState()) {
        self.index = index
        self.term = term
        self.confState = confState
    }
}

/// The application state as of `metadata.index`, opaque to Raft.
public struct Snapshot: Sendable, Hashable {
    public var metadata: SnapshotMetadata
    public var data: [UInt8]

    public init(metadata: SnapshotMetadata = SnapshotMetadata(), data: [UInt8] = []) {
        self.metadata = metadata
        self.data = data
    }

    /// True for the placeholder snapshot of a log that was never compacted.
    public var isEmpty: Bool { metadata.index == 0 }
}
