/// How the leader replicates to one peer.
public enum ProgressState: Sendable, Hashable {
    /// Sends one append at a time until it finds where the peer's log matches.
    case probe
    /// Streams appends (pipelined, bounded by the in-flight limits).
    case replicate
    /// Sends a snapshot, in chunks.
    case snapshot
}

/// The leader's view of one peer's replication.
public struct PeerProgress: Sendable, Hashable {
    public var match: LogIndex
    public var next: LogIndex
    public var state: ProgressState
    public var isLearner: Bool
    public var recentActive: Bool
    public var inflightMessages: Int
    public var inflightBytes: Int
    /// Index of the snapshot being sent (state `.snapshot`).
    public var pendingSnapshot: LogIndex
    /// Bytes of that snapshot the peer acknowledged holding.
    public var snapshotAckedBytes: UInt64
}

/// A read-only view of a node, for tests, `/status` and the simulator.
public struct RaftStatus: Sendable {
    public var id: NodeID
    public var hardState: HardState
    public var softState: SoftState
    public var applied: LogIndex
    public var lastIndex: LogIndex
    public var firstIndex: LogIndex
    public var confState: ConfState
    /// Per-peer replication progress; only a leader has it.
    public var progress: [NodeID: PeerProgress]
    /// The node a leadership transfer goes to (0 = none).
    public var leadTransferee: NodeID
    /// True while the node is quiet (no heartbeats, no election timer).
    public var isQuiesced: Bool
    /// Payload bytes of proposals appended but not committed (leader).
    public var uncommittedBytes: Int
}
