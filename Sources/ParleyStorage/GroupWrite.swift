import ParleyRaft
import ParleyRaftWire

/// What one group asks to make durable in one Ready cycle. Applied in field order: snapshot, entries, hard
/// state. (Compaction is not written: rows are deleted once no group needs them, see `logFrom`.)
public struct GroupWrite: Sendable, Equatable {
    /// A snapshot to keep (made locally, or received from the leader).
    public var snapshot: Snapshot?
    /// A received snapshot replaces the whole log; a local one does not.
    public var snapshotReplacesLog = false
    /// Entries to append; any held entries from `entries.first.index` on are replaced first.
    public var entries: [Entry] = []
    public var hardState: HardState?
    /// The hard state's term or vote changed (not only its commit index).
    public var termOrVoteChanged = false
    /// The `raft_log` row the entries go into (set when the write is staged).
    public var rowSeq: Int64?
    /// The group's rows below this seq are no longer needed (`DurableGroupLog.logFrom`).
    public var logFrom: Int64?
    /// Rows of this group below the new `logFrom`: once this write is committed the database deletes them,
    /// a few at a time after later cycles (`NodeDatabase.freedRows`) — a group frees its own rows, whatever
    /// the other groups still hold.
    public var deadRows: [Int64] = []

    public init() {}

    /// Whether this write must be synced before the cycle's acknowledgements leave and its answers go out:
    /// entries, a snapshot, a new term or vote. A hard state that only moves the commit index
    /// need not be (etcd's `mustSync`): the entries it covers were synced when they were appended and a lost
    /// commit index is learned again from the leader.
    public var needsSync: Bool {
        snapshot != nil || !entries.isEmpty || termOrVoteChanged
    }

    public var isEmpty: Bool {
        snapshot == nil && entries.isEmpty && hardState == nil && logFrom == nil && deadRows.isEmpty
    }
}

/// All groups' writes of one Ready cycle: they reach the disk in one transaction and one fsync
/// (group commit), so a node with many shards pays one sync per cycle, not one per group.
public struct StorageBatch: Sendable, Equatable {
    /// Kept sorted by group id so the transaction writes in a stable order.
    public private(set) var writes: [(group: GroupID, write: GroupWrite)] = []

    public init() {}

    /// Room history rows applied since the last batch (N5), written in the same transaction.
    public var history: [RoomHistoryStore.Row] = []
    /// The IM logs' items applied since the last batch (issue 38 item 5), handed over with the history rows.
    public var imLogs: [ImLogRow] = []

    /// Delete at most this many log rows that no group needs any more (oldest first).
    public var deleteUnneededLogRows = 0

    public var isEmpty: Bool {
        history.isEmpty && imLogs.isEmpty && deleteUnneededLogRows == 0 && writes.allSatisfy { $0.write.isEmpty }
    }

    /// Number of entries the batch appends, over all groups.
    public var entryCount: Int { writes.reduce(0) { $0 + $1.write.entries.count } }

    /// Whether any group's write must be synced (history rows never need to be: a crash replays their entries).
    public var needsSync: Bool { writes.contains { $0.write.needsSync } }

    /// Whether the batch only moves commit indexes: nothing in it has to reach the disk at any particular
    /// time (a lost commit index is learned again from the leader), so it may wait for a later batch.
    public var onlyCommitIndexes: Bool {
        history.isEmpty && imLogs.isEmpty && deleteUnneededLogRows == 0
            && writes.allSatisfy { $0.write.snapshot == nil && $0.write.entries.isEmpty && !$0.write.termOrVoteChanged
                && $0.write.logFrom == nil && !$0.write.snapshotReplacesLog && $0.write.deadRows.isEmpty }
    }

    /// Takes in the hard states of an earlier batch that `onlyCommitIndexes`, so they are written with this
    /// one. Where both hold a group's hard state this batch's is newer and wins. Call after every group has
    /// staged into this batch.
    public mutating func absorb(earlier: StorageBatch) {
        precondition(earlier.onlyCommitIndexes, "only a batch of commit indexes can be written late")
        for (group, write) in earlier.writes {
            guard let carried = write.hardState else { continue }
            update(group) { if $0.hardState == nil { $0.hardState = carried } }
        }
    }

    /// Takes in another Raft loop's batch, to go in the same transaction (issue 35, `GroupCommit`): the loops
    /// hold different groups, so no group is written twice.
    public mutating func join(_ other: StorageBatch) {
        for (group, write) in other.writes {
            precondition(!writes.contains { $0.group == group }, "group \(group) in two loops' batches")
            update(group) { $0 = write }
        }
        history += other.history
        imLogs += other.imLogs
        deleteUnneededLogRows += other.deleteUnneededLogRows
    }

    /// Changes the pending write of `group` in place (creating it if needed).
    public mutating func update(_ group: GroupID, _ change: (inout GroupWrite) -> Void) {
        if let i = writes.firstIndex(where: { $0.group == group }) {
            change(&writes[i].write)
        } else {
            var w = GroupWrite()
            change(&w)
            let at = writes.firstIndex(where: { $0.group > group }) ?? writes.count
            writes.insert((group, w), at: at)
        }
    }

    public static func == (a: StorageBatch, b: StorageBatch) -> Bool {
        a.writes.count == b.writes.count && a.history == b.history && a.imLogs == b.imLogs
            && zip(a.writes, b.writes).allSatisfy { $0.group == $1.group && $0.write == $1.write }
    }
}

/// Why the database could not be used.
public enum StorageError: Error, Equatable, CustomStringConvertible {
    /// The stored data breaks an invariant (a gap in a log, an unreadable blob).
    case corrupt(String)
    /// A group that does not exist on this node was opened.
    case unknownGroup(GroupID)
    /// A group was created twice.
    case groupExists(GroupID)

    public var description: String {
        switch self {
        case .corrupt(let why): "storage is corrupt: \(why)"
        case .unknownGroup(let g): "no group \(g) on this node"
        case .groupExists(let g): "group \(g) already exists"
        }
    }
}
