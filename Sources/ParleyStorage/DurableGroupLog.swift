import ParleyRaft

/// One group's Raft storage on a node: reads are served from an in-memory copy of the log since the last
/// snapshot (as etcd does over its WAL), and every change is also staged as a `GroupWrite` that the host
/// collects into the cycle's `StorageBatch` and commits with `NodeDatabase.commit` before it sends any
/// message that depends on it.
public final class DurableGroupLog: RaftStorage {
    public let group: GroupID
    private let memory: MemoryStorage
    private var pending = GroupWrite()

    init(group: GroupID, memory: MemoryStorage) {
        self.group = group
        self.memory = memory
    }

    // MARK: RaftStorage (reads)

    public func initialState() throws -> (HardState, ConfState) { try memory.initialState() }
    public func entries(from lo: LogIndex, to hi: LogIndex, maxBytes: Int) throws -> [Entry] {
        try memory.entries(from: lo, to: hi, maxBytes: maxBytes)
    }
    public func term(at index: LogIndex) throws -> Term { try memory.term(at: index) }
    public func firstIndex() throws -> LogIndex { try memory.firstIndex() }
    public func lastIndex() throws -> LogIndex { try memory.lastIndex() }
    public func snapshot() throws -> Snapshot { try memory.snapshot() }

    /// The hard state as last set (durable once the staged write is committed).
    public var hardState: HardState { memory.persistedHardState }

    // MARK: Writes (staged until the next commit)

    /// Appends entries, replacing any from the first new index on.
    public func append(_ entries: [Entry]) throws {
        guard let first = entries.first else { return }
        try memory.append(entries)
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
        pending.snapshot = snapshot
        pending.snapshotReplacesLog = true
        pending.entries = []
        pending.compactBelow = nil
    }

    /// A snapshot of this node's own applied state; the log is kept until `compact(upTo:)`.
    @discardableResult
    public func createSnapshot(at index: LogIndex, confState: ConfState?, data: [UInt8]) throws -> Snapshot {
        let snapshot = try memory.createSnapshot(at: index, confState: confState, data: data)
        pending.snapshot = snapshot
        return snapshot
    }

    /// Drops the entries up to `index`, which must be covered by the snapshot.
    public func compact(upTo index: LogIndex) throws {
        guard index <= (try memory.snapshot()).metadata.index else { throw RaftStorageError.unavailable }
        try memory.compact(upTo: index)
        pending.compactBelow = max(pending.compactBelow ?? 0, index + 1)
    }

    /// Everything staged since the last call, for the cycle's batch.
    public func takePendingWrite() -> GroupWrite {
        defer { pending = GroupWrite() }
        return pending
    }

    /// Stages this group's pending write into `batch`.
    public func stage(into batch: inout StorageBatch) {
        let write = takePendingWrite()
        guard !write.isEmpty else { return }
        batch.update(group) { $0 = write }
    }
}
