/// Stable storage kept in memory: the log, the hard state and the latest snapshot. Used by tests, the
/// simulator and benchmarks; the SQLite storage implements the same protocol.
///
/// The log is an array whose element 0 is a placeholder for the snapshot's index and term, so an index
/// maps to an array position by subtracting one offset and no operation scans the log.
public final class MemoryStorage: RaftStorage {
    private var hardState = HardState()
    private var currentSnapshot = Snapshot()
    /// `log[0]` stands for the snapshot (its index and term); real entries follow.
    private var log: [Entry] = [Entry(term: 0, index: 0)]
    /// The bytes of the entries held (their `byteSize`), so a host can bound its groups' logs in memory
    /// (SPEC D1) without walking them.
    public private(set) var heldBytes = 0
    /// Entries up to this index hold no data here (`evict(through:)`): a durable log reads them back from disk.
    /// Their terms stay, so matching and probing never need the disk.
    public private(set) var evictedThrough: LogIndex = 0

    public init() {}

    /// Storage for a member of a new group whose founding membership is `confState`.
    ///
    /// The membership is held by a snapshot at index 1, term 1 (and the hard state's term is 1), so a
    /// member added later with empty storage is brought up to date by that snapshot, membership included.
    public convenience init(bootstrap confState: ConfState) {
        self.init()
        currentSnapshot = Snapshot(metadata: SnapshotMetadata(index: 1, term: 1, confState: confState))
        log = [Entry(term: 1, index: 1)]
        hardState = HardState(term: 1, vote: 0, commit: 1)
    }

    private var offset: LogIndex { log[0].index }

    public func initialState() throws -> (HardState, ConfState) {
        (hardState, currentSnapshot.metadata.confState)
    }

    /// The persisted hard state.
    public var persistedHardState: HardState { hardState }

    public func setHardState(_ hs: HardState) {
        hardState = hs
    }

    public func entries(from lo: LogIndex, to hi: LogIndex, maxBytes: Int) throws -> [Entry] {
        guard lo > offset else { throw RaftStorageError.compacted }
        // An evicted entry here has no data: handing it out would apply or send an empty entry.
        precondition(lo >= hi || lo > evictedThrough, "entries \(lo)..<\(hi) asked of memory, evicted through \(evictedThrough)")
        guard hi <= lastIndexValue + 1 else { throw RaftStorageError.unavailable }
        guard lo < hi else { return [] }
        let start = Int(lo - offset), end = Int(hi - offset)
        var size = 0
        var stop = start
        while stop < end {
            size += log[stop].byteSize
            if size > maxBytes && stop > start { break }
            stop += 1
        }
        return Array(log[start..<stop])
    }

    public func term(at index: LogIndex) throws -> Term {
        guard index >= offset else { throw RaftStorageError.compacted }
        guard index <= lastIndexValue else { throw RaftStorageError.unavailable }
        return log[Int(index - offset)].term
    }

    public func firstIndex() throws -> LogIndex { offset + 1 }

    public func lastIndex() throws -> LogIndex { lastIndexValue }

    private var lastIndexValue: LogIndex { offset + LogIndex(log.count) - 1 }

    public func snapshot() throws -> Snapshot { currentSnapshot }

    /// Replaces the whole state with the snapshot (a follower that received it from the leader).
    public func applySnapshot(_ s: Snapshot) throws {
        guard s.metadata.index > currentSnapshot.metadata.index else { throw RaftStorageError.snapshotOutOfDate }
        currentSnapshot = s
        log = [Entry(term: s.metadata.term, index: s.metadata.index)]
        heldBytes = 0
        evictedThrough = s.metadata.index
    }

    /// Makes a snapshot of the application state `data` as of `index` (which must be applied); the
    /// log is kept until `compact(upTo:)`.
    @discardableResult
    public func createSnapshot(at index: LogIndex, confState: ConfState?, data: [UInt8]) throws -> Snapshot {
        guard index > currentSnapshot.metadata.index else { throw RaftStorageError.snapshotOutOfDate }
        guard index <= lastIndexValue else { throw RaftStorageError.unavailable }
        var metadata = SnapshotMetadata(index: index, term: log[Int(index - offset)].term,
                                        confState: currentSnapshot.metadata.confState)
        if let confState { metadata.confState = confState }
        currentSnapshot = Snapshot(metadata: metadata, data: data)
        return currentSnapshot
    }

    /// Drops the data of the entries up to `index` (at most the last), keeping their terms: for a storage that
    /// holds them on disk too and reads them back (SPEC D1). Only committed entries may be evicted — they are
    /// never replaced.
    public func evict(through index: LogIndex) {
        let end = min(index, lastIndexValue)
        guard end > max(offset, evictedThrough) else { return }
        for i in Int(max(offset, evictedThrough) + 1 - offset)...Int(end - offset) {
            heldBytes -= log[i].byteSize
            log[i].data = []
        }
        evictedThrough = end
    }

    /// The bytes counted for the entry at `index` in `heldBytes` (its `byteSize`; 0 once evicted — what is left
    /// of it, its index and term, is bounded by the entries between snapshots).
    public func heldSize(at index: LogIndex) -> Int {
        guard index > max(offset, evictedThrough), index <= lastIndexValue else { return 0 }
        return log[Int(index - offset)].byteSize
    }

    /// Drops the entries before `index`; the entry at `index` becomes the placeholder.
    public func compact(upTo index: LogIndex) throws {
        guard index > offset else { throw RaftStorageError.compacted }
        guard index <= lastIndexValue else { throw RaftStorageError.unavailable }
        let drop = Int(index - offset)
        for e in log[1...drop] where e.index > evictedThrough { heldBytes -= e.byteSize }
        var kept = [Entry(term: log[drop].term, index: index)]
        kept.reserveCapacity(log.count - drop)
        kept.append(contentsOf: log[(drop + 1)...])
        log = kept
    }

    /// Appends entries, replacing any held entries from the first new index on (a follower whose log
    /// diverged from the leader's). Entries already compacted are skipped.
    public func append(_ entries: [Entry]) throws {
        guard let first = entries.first?.index, let last = entries.last?.index else { return }
        if last <= offset { return }  // all compacted already
        var newEntries = entries[...]
        if first <= offset { newEntries = entries[Int(offset + 1 - first)...] }
        let start = newEntries.first!.index
        guard start <= lastIndexValue + 1 else { throw RaftStorageError.unavailable }
        let keep = Int(start - offset)
        precondition(start > evictedThrough, "an evicted (committed) entry cannot be replaced")
        if keep < log.count {
            for e in log[keep...] { heldBytes -= e.byteSize }
            log.removeSubrange(keep...)
        }
        for e in newEntries { heldBytes += e.byteSize }
        log.append(contentsOf: newEntries)
    }
}
