import ParleyRaft

/// When a group snapshots its applied state and what of its log it keeps in memory after (SPEC D1).
public struct SnapshotRule: Sendable {
    /// A snapshot after this many applied entries since the last…
    public var every: LogIndex = 10_000
    /// …or once this many bytes of entries were appended since the last one: with batched entries 10,000
    /// entries can be hundreds of MiB of log, held in memory and on disk. (While the rows a snapshot frees
    /// were deleted inside its transaction, snapshots this often cost a fifth of a long run's throughput at
    /// 1000 clients; deleted later, a few at a time, they cost nothing measurable — docs/benchmarks.md,
    /// session 8.)
    public var everyBytes = 16 << 20
    /// Entries kept behind a snapshot for followers only a little behind (further behind, they are sent the
    /// snapshot): at most this many…
    public var keep: LogIndex = 1_000
    /// …and at most this many bytes of them.
    public var keepBytes = 256 << 10

    public init() {}
}
