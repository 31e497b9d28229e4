import ParleyRaft
import ParleyRaftWire

/// One group's Raft storage on a node: reads are served from an in-memory copy of the log since the last
/// snapshot (as etcd does over its WAL), and every change is also staged as a `GroupWrite` that the host
/// collects into the cycle's `StorageBatch` and commits with `NodeDatabase.commit` before it sends any
/// message that depends on it.
///
/// It also keeps track of its rows in `raft_log` that still matter (they hold entries after the snapshot)
/// and of `logFrom`, the row before which none do. When `logFrom` moves (a snapshot, a received snapshot, a
/// rewrite), the group's rows below it are freed (`GroupWrite.deadRows`) and deleted soon after; rows
/// below every group's `logFrom` are deleted too (those of databases written before groups freed their
/// own). A quiet group whose oldest needed row is `rewriteAfterRows` rows old (`pinsOldRows`) is made to
/// write its few live entries again as one new row (`rewriteLiveEntries`).
public final class DurableGroupLog: RaftStorage {
    public let group: GroupID
    private let memory: MemoryStorage
    private var pending = GroupWrite()
    private let sequence: LogSequence
    /// This group's rows that hold entries after its snapshot, oldest first: their seq and first and last index.
    private var rows: [(seq: Int64, first: LogIndex, last: LogIndex)]
    /// Rows of this group below this seq are not needed (as last committed or staged).
    public private(set) var logFrom: Int64
    let rewriteAfterRows: Int64
    /// A rewrite of the live entries is staged.
    private var rewriteStaged = false
    /// Bytes of entries appended since the last snapshot (an estimate of the live log: entries replaced
    /// by a leader's are counted too). A group snapshots when it grows large, not only every so many entries.
    public private(set) var bytesSinceSnapshot = 0
    /// Reads `raft_log` rows by seq (their entries' bytes, in the order asked): how evicted entries come back.
    private let readRows: ([Int64]) throws -> [[UInt8]]

    init(group: GroupID, memory: MemoryStorage, sequence: LogSequence,
         rows: [(seq: Int64, first: LogIndex, last: LogIndex)] = [],
         logFrom: Int64 = 0, rewriteAfterRows: Int64, readRows: @escaping ([Int64]) throws -> [[UInt8]]) {
        self.readRows = readRows
        self.group = group
        self.memory = memory
        self.sequence = sequence
        self.rows = rows
        self.logFrom = logFrom
        self.rewriteAfterRows = rewriteAfterRows
    }

    // MARK: RaftStorage (reads)

    public func initialState() throws -> (HardState, ConfState) { try memory.initialState() }
    public func entries(from lo: LogIndex, to hi: LogIndex, maxBytes: Int) throws -> [Entry] {
        let evicted = memory.evictedThrough
        guard lo <= evicted, lo < hi else { return try memory.entries(from: lo, to: hi, maxBytes: maxBytes) }
        guard lo > (try memory.snapshot()).metadata.index else { throw RaftStorageError.compacted }
        var out = try readEvicted(from: lo, to: min(hi, evicted + 1), maxBytes: maxBytes)
        let size = out.byteSize
        if out.last?.index == evicted, hi > evicted + 1, size < maxBytes {
            let more = try memory.entries(from: evicted + 1, to: hi, maxBytes: maxBytes - size)
            out += more
        }
        return out
    }

    /// SPEC D1: entries evicted from memory, read back from this group's rows (a follower far behind, a
    /// rewrite, the committed entries a restarted replica applies). Memory kept every entry's term, and an
    /// entry with the log's index and term is the log's entry (Raft's log matching): so the rows with entries
    /// in the range are read in order, a few at a time, each entry taken where its term is the log's (a row's
    /// older, replaced version is not), until the range — or `maxBytes` of it — is whole.
    private func readEvicted(from lo: LogIndex, to hi: LogIndex, maxBytes: Int) throws -> [Entry] {
        let wanted = rows.filter { $0.last >= lo && $0.first < hi }.map(\.seq)
        var found = [Entry?](repeating: nil, count: Int(hi - lo))
        var out: [Entry] = []
        var size = 0
        var next = lo
        var taken = 0
        fill: while taken < wanted.count {
            let chunk = Array(wanted[taken..<min(wanted.count, taken + 32)])
            taken += chunk.count
            for bytes in try readRows(chunk) {
                for e in try LogRow.decode(bytes, group: group) where e.index >= lo && e.index < hi {
                    if found[Int(e.index - lo)] == nil, try memory.term(at: e.index) == e.term { found[Int(e.index - lo)] = e }
                }
            }
            while next < hi, let e = found[Int(next - lo)] {
                size += e.byteSize
                if size > maxBytes && !out.isEmpty { break fill }
                out.append(e)
                next += 1
            }
            if next == hi { break }
        }
        // Not on disk (any more): the leader sends a snapshot instead.
        guard !out.isEmpty else { throw RaftStorageError.unavailable }
        return out
    }

    /// SPEC D1: drops the data of the entries up to `index` from memory (committed ones, on disk in this
    /// group's rows); they are read back when needed.
    public func evict(through index: LogIndex) { memory.evict(through: index) }
    public var evictedThrough: LogIndex { memory.evictedThrough }
    public func heldSize(at index: LogIndex) -> Int { memory.heldSize(at: index) }
    public func term(at index: LogIndex) throws -> Term { try memory.term(at: index) }
    public func firstIndex() throws -> LogIndex { try memory.firstIndex() }
    public func lastIndex() throws -> LogIndex { try memory.lastIndex() }
    public func snapshot() throws -> Snapshot { try memory.snapshot() }

    /// The bytes of the entries held in memory (SPEC D1: the host bounds their sum over its groups).
    public var heldBytes: Int { memory.heldBytes }

    /// The hard state as last set (durable once the staged write is committed).
    public var hardState: HardState { memory.persistedHardState }

    // MARK: Writes (staged until the next commit)

    /// Appends entries, replacing any from the first new index on.
    public func append(_ entries: [Entry]) throws {
        guard let first = entries.first else { return }
        try memory.append(entries)
        bytesSinceSnapshot += entries.reduce(0) { $0 + $1.data.count }
        // Within one cycle a later append may overwrite part of an earlier one.
        if let keep = pending.entries.firstIndex(where: { $0.index >= first.index }) {
            pending.entries.removeSubrange(keep...)
        }
        pending.entries.append(contentsOf: entries)
    }

    public func setHardState(_ hs: HardState) {
        let before = memory.persistedHardState
        if hs.term != before.term || hs.vote != before.vote { pending.termOrVoteChanged = true }
        memory.setHardState(hs)
        pending.hardState = hs
    }

    /// A snapshot received from the leader: it replaces the whole log.
    public func applySnapshot(_ snapshot: Snapshot) throws {
        try memory.applySnapshot(snapshot)
        bytesSinceSnapshot = 0
        pending.snapshot = snapshot
        pending.snapshotReplacesLog = true
        pending.entries = []
    }

    /// A snapshot of this node's own applied state; the log is kept until `compact(upTo:)`.
    @discardableResult
    public func createSnapshot(at index: LogIndex, confState: ConfState?, data: [UInt8]) throws -> Snapshot {
        let snapshot = try memory.createSnapshot(at: index, confState: confState, data: data)
        // An estimate from what memory holds: entries evicted after the index (a replica still replaying its
        // log after a restart) count nothing rather than being read back from disk to be measured.
        let last = try memory.lastIndex()
        bytesSinceSnapshot = index < last ? (index + 1 ... last).reduce(0) { $0 + memory.heldSize(at: $1) } : 0
        pending.snapshot = snapshot
        return snapshot
    }

    /// Drops the entries up to `index` from memory; they must be covered by the snapshot. (On disk, the
    /// snapshot already made them unneeded: a reopened log starts after it.)
    public func compact(upTo index: LogIndex) throws {
        guard index <= (try memory.snapshot()).metadata.index else { throw RaftStorageError.unavailable }
        try memory.compact(upTo: index)
    }

    /// Everything staged since the last call, for the cycle's batch.
    public func takePendingWrite() -> GroupWrite {
        defer { pending = GroupWrite() }
        return pending
    }

    /// Stages this group's pending write into `batch` (at most once per batch), numbering its log row and
    /// moving `logFrom` past the rows a snapshot or a rewrite made useless.
    public func stage(into batch: inout StorageBatch) {
        let rewrite = rewriteStaged
        rewriteStaged = false
        var write = takePendingWrite()
        var dropped: [Int64] = []
        if write.snapshotReplacesLog || rewrite {
            dropped = rows.map(\.seq)
            rows.removeAll()
        }
        if let first = write.entries.first, let last = write.entries.last {
            let seq = sequence.take()
            write.rowSeq = seq
            rows.append((seq, first.index, last.index))
        }
        if let s = write.snapshot {
            dropped += rows.filter { $0.last <= s.metadata.index }.map(\.seq)
            rows.removeAll { $0.last <= s.metadata.index }
        }
        if write.snapshot != nil || write.snapshotReplacesLog || rewrite {
            let from = rows.first?.seq ?? sequence.upcoming
            if from != logFrom {
                logFrom = from
                write.logFrom = from
            }
            // Only rows below `logFrom`: a reopened group never reads them. (A dropped row above it, one whose
            // entries a later row replaced, stays until every group's `logFrom` has passed it and the deletion
            // by prefix takes it.)
            write.deadRows = dropped.filter { $0 < logFrom }
        }
        guard !write.isEmpty else { return }
        precondition(!batch.writes.contains { $0.group == group }, "group \(group) staged twice in one batch")
        batch.update(group) { $0 = write }
    }

    /// The oldest row this group needs (or, needing none, its `logFrom`).
    public var oldestNeededRow: Int64 { rows.first?.seq ?? logFrom }

    /// The rows this group's log holds (freed when the group is dropped).
    public var heldRows: [Int64] { rows.map(\.seq) }

    /// Whether this group keeps rows `rewriteAfterRows` or more rows old from being deleted.
    public var pinsOldRows: Bool { sequence.upcoming - oldestNeededRow >= rewriteAfterRows }

    /// Whether this group wrote none of the newest `rewriteAfterRows` rows. A group that writes all the time
    /// needs its rows until it snapshots, and copying them frees nothing: all the others, started with it,
    /// pin rows as old.
    public var isQuiet: Bool { sequence.upcoming - (rows.last?.seq ?? logFrom) >= rewriteAfterRows }

    /// Stages this group's live entries (those after its snapshot) as one new row, so none of its older rows
    /// is needed — unless they come to more than `maxBytes`, when copying them would stall the cycle and a
    /// snapshot is the cheaper way. Returns whether it staged the rewrite.
    public func rewriteLiveEntries(maxBytes: Int) throws -> Bool {
        let after = try memory.snapshot().metadata.index
        let last = try memory.lastIndex()
        if last > after {
            let live = try entries(from: after + 1, to: last + 1, maxBytes: maxBytes + 1)
            guard live.last?.index == last, live.reduce(0, { $0 + $1.data.count }) <= maxBytes else { return false }
            if !pending.snapshotReplacesLog { pending.entries = live }
        }
        rewriteStaged = true
        return true
    }
}
