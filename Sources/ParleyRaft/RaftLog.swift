/// The log as the core sees it: stable storage followed by the unstable tail, plus the commit and
/// apply positions. A class, not a struct: reading a struct held by `Raft` across a call into the
/// storage protocol makes Swift copy it whole (arrays retained and released) on every access.
final class RaftLog {
    let storage: RaftStorage
    var unstable: UnstableLog
    private(set) var committed: LogIndex
    private(set) var applied: LogIndex
    let maxCommittedBytesPerReady: Int

    init(storage: RaftStorage, maxCommittedBytesPerReady: Int) throws {
        self.storage = storage
        self.maxCommittedBytesPerReady = maxCommittedBytesPerReady
        let first = try storage.firstIndex(), last = try storage.lastIndex()
        unstable = UnstableLog(offset: last + 1)
        committed = first - 1
        applied = first - 1
    }

    var firstIndex: LogIndex {
        if let i = unstable.firstIndexIfKnown { return i }
        return (try? storage.firstIndex()) ?? 1
    }

    var lastIndex: LogIndex {
        if let i = unstable.lastIndexIfKnown { return i }
        return (try? storage.lastIndex()) ?? 0
    }

    /// Term at `i`; throws `.compacted` before the snapshot and `.unavailable` past the end.
    func term(at i: LogIndex) throws -> Term {
        if let t = unstable.term(at: i) { return t }
        let dummy = firstIndex - 1
        if i < dummy { throw RaftStorageError.compacted }
        if i > lastIndex { throw RaftStorageError.unavailable }
        return try storage.term(at: i)
    }

    /// Term at `i`, or 0 when it is compacted or past the end.
    func termOrZero(_ i: LogIndex) -> Term { (try? term(at: i)) ?? 0 }

    var lastTerm: Term { termOrZero(lastIndex) }

    func matchTerm(_ i: LogIndex, _ t: Term) -> Bool {
        guard let actual = try? term(at: i) else { return false }
        return actual == t
    }

    /// Whether a candidate whose log ends at (`index`, `term`) is at least as up to date as this log.
    func isUpToDate(index: LogIndex, term: Term) -> Bool {
        let last = lastTerm
        return term > last || (term == last && index >= lastIndex)
    }

    /// Appends a leader's entries that follow (`index`, `logTerm`) if the logs match there; returns the
    /// index of the last new entry, or nil on a mismatch.
    func maybeAppend(index: LogIndex, logTerm: Term, commit: LogIndex, entries: [Entry]) -> LogIndex? {
        guard matchTerm(index, logTerm) else { return nil }
        let lastNew = index + LogIndex(entries.count)
        let conflict = findConflict(entries)
        if conflict != 0 {
            precondition(conflict > committed, "entry \(conflict) conflicts with committed entry (committed \(committed))")
            append(entries[Int(conflict - index - 1)...])
        }
        self.commit(to: min(commit, lastNew))
        return lastNew
    }

    @discardableResult
    func append(_ entries: ArraySlice<Entry>) -> LogIndex {
        guard let first = entries.first else { return lastIndex }
        precondition(first.index > committed, "appending at \(first.index) would overwrite committed \(committed)")
        unstable.truncateAndAppend(entries)
        return lastIndex
    }

    /// The index of the first entry whose term differs from ours, or of the first new entry; 0 if
    /// every entry is already held.
    func findConflict(_ entries: [Entry]) -> LogIndex {
        for e in entries where !matchTerm(e.index, e.term) { return e.index }
        return 0
    }

    /// Walks back from `index` to the last entry whose term is <= `term`: with it a leader skips a whole
    /// divergent term per round trip instead of one entry.
    func findConflictByTerm(index: LogIndex, term: Term) -> (index: LogIndex, term: Term) {
        var i = index
        while true {
            guard let t = try? self.term(at: i) else { return (i, 0) }
            if t <= term || i == 0 { return (i, t) }
            i -= 1
        }
    }

    /// Entries `[lo, hi)` limited to `maxBytes` (at least one).
    func slice(_ lo: LogIndex, _ hi: LogIndex, maxBytes: Int) throws -> [Entry] {
        guard lo < hi else { return [] }
        if lo < firstIndex { throw RaftStorageError.compacted }
        if hi > lastIndex + 1 { throw RaftStorageError.unavailable }
        var result: [Entry] = []
        if lo < unstable.offset {
            result = try storage.entries(from: lo, to: min(hi, unstable.offset), maxBytes: maxBytes)
            // Storage stopped early because of the byte limit: the unstable part is not needed.
            if LogIndex(result.count) < min(hi, unstable.offset) - lo { return result }
        }
        if hi > unstable.offset {
            let part = unstable.slice(max(lo, unstable.offset), hi)
            var size = result.byteSize
            for e in part {
                size += e.byteSize
                if size > maxBytes && !result.isEmpty { break }
                result.append(e)
            }
        }
        return result
    }

    func entries(from i: LogIndex, maxBytes: Int) throws -> [Entry] {
        guard i <= lastIndex else { return [] }
        return try slice(i, lastIndex + 1, maxBytes: maxBytes)
    }

    var hasPendingSnapshot: Bool { unstable.snapshot != nil }

    /// Committed entries not yet applied (none while a snapshot is waiting to be persisted).
    func nextCommittedEntries() -> [Entry] {
        if hasPendingSnapshot { return [] }
        let lo = max(applied + 1, firstIndex)
        guard committed + 1 > lo else { return [] }
        return (try? slice(lo, committed + 1, maxBytes: maxCommittedBytesPerReady)) ?? []
    }

    var hasNextCommittedEntries: Bool {
        // Cheap checks first: this runs for every idle group on every loop.
        committed > applied && !hasPendingSnapshot && committed + 1 > max(applied + 1, firstIndex)
    }

    func commit(to i: LogIndex) {
        guard committed < i else { return }
        precondition(i <= lastIndex, "commit \(i) is past the last index \(lastIndex)")
        committed = i
    }

    func applied(to i: LogIndex) {
        guard i != 0, i > applied else { return }
        precondition(i <= committed, "applied \(i) is past committed \(committed)")
        applied = i
    }

    /// Commits `index` only if its entry is of `term` (the leader's current term: Raft §5.4.2, Figure 8).
    func maybeCommit(index: LogIndex, term: Term) -> Bool {
        guard index > committed, index != .max, termOrZero(index) == term else { return false }
        commit(to: index)
        return true
    }

    func restore(_ s: Snapshot) {
        committed = s.metadata.index
        unstable.restore(s)
    }

    func snapshot() throws -> Snapshot {
        if let s = unstable.snapshot { return s }
        return try storage.snapshot()
    }
}
