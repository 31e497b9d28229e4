/// Why storage could not answer.
public enum RaftStorageError: Error, Equatable, Sendable {
    /// The requested index is before the first index (compacted into a snapshot).
    case compacted
    /// The requested index is after the last index.
    case unavailable
    /// A snapshot is being made; ask again later.
    case snapshotTemporarilyUnavailable
    /// A snapshot older than the one held was offered.
    case snapshotOutOfDate
}

/// The read side of a node's stable storage that the core needs. The application writes through the
/// concrete type (see `MemoryStorage`) while handling a `Ready`.
public protocol RaftStorage: AnyObject {
    /// The persisted hard state and the membership as of the last snapshot.
    func initialState() throws -> (HardState, ConfState)
    /// Entries in `[lo, hi)`, stopping once `maxBytes` is exceeded (always at least one entry).
    func entries(from lo: LogIndex, to hi: LogIndex, maxBytes: Int) throws -> [Entry]
    /// Term of the entry at `index`; valid from `firstIndex() - 1` (the snapshot's index) to `lastIndex()`.
    func term(at index: LogIndex) throws -> Term
    /// Index of the first entry held (snapshot index + 1).
    func firstIndex() throws -> LogIndex
    /// Index of the last entry held (or the snapshot's index if there is none).
    func lastIndex() throws -> LogIndex
    /// The latest snapshot.
    func snapshot() throws -> Snapshot
}
