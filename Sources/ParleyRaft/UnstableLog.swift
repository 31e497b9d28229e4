/// Entries (and possibly a snapshot) not yet handed to stable storage. `entries[i]` has index
/// `offset + i`; the array is only ever trimmed at the front or truncated and extended at the back.
struct UnstableLog {
    var snapshot: Snapshot?
    var entries: [Entry] = []
    var offset: LogIndex

    init(offset: LogIndex) {
        self.offset = offset
    }

    /// The first index, known only when a snapshot is pending.
    var firstIndexIfKnown: LogIndex? { snapshot.map { $0.metadata.index + 1 } }

    var lastIndexIfKnown: LogIndex? {
        if !entries.isEmpty { return offset + LogIndex(entries.count) - 1 }
        return snapshot?.metadata.index
    }

    func term(at i: LogIndex) -> Term? {
        if i < offset {
            if let s = snapshot, s.metadata.index == i { return s.metadata.term }
            return nil
        }
        guard let last = lastIndexIfKnown, i <= last else { return nil }
        return entries[Int(i - offset)].term
    }

    /// Storage now holds the entries up to `index` (written with term `term`).
    mutating func stableTo(index: LogIndex, term: Term) {
        guard let t = self.term(at: index), t == term, index >= offset else { return }
        let drop = Int(index + 1 - offset)
        if drop >= entries.count {
            entries.removeAll(keepingCapacity: true)
        } else {
            entries.removeFirst(drop)
        }
        offset = index + 1
    }

    mutating func stableSnapshotTo(index: LogIndex) {
        if let s = snapshot, s.metadata.index == index { snapshot = nil }
    }

    mutating func restore(_ s: Snapshot) {
        offset = s.metadata.index + 1
        entries.removeAll()
        snapshot = s
    }

    mutating func truncateAndAppend(_ new: ArraySlice<Entry>) {
        guard let first = new.first?.index else { return }
        let end = offset + LogIndex(entries.count)
        if first == end {
            entries.append(contentsOf: new)
        } else if first <= offset {
            // Replaces everything unstable (and storage's tail beyond `first` on the next write).
            offset = first
            entries = Array(new)
        } else {
            entries.removeSubrange(Int(first - offset)...)
            entries.append(contentsOf: new)
        }
    }

    /// Entries `[lo, hi)`, all within the unstable part.
    func slice(_ lo: LogIndex, _ hi: LogIndex) -> ArraySlice<Entry> {
        entries[Int(lo - offset)..<Int(hi - offset)]
    }
}
