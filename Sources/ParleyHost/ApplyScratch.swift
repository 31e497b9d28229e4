import ParleyIM
import ParleyRooms
import ParleyStorage
import ParleyShardState
import ParleyPlacement

/// What the replicas' apply callbacks leave for the host between cycles: which shards applied events, and
/// the history rows not yet written.
final class ApplyScratch {
    var shards = Set<ShardID>()
    var history: [RoomHistoryStore.Row] = []
    /// The IM logs' items not yet written (issue 38 item 5).
    var imLogs: [ImLogRow] = []

    /// The estimated bytes of the waiting rows and items (`HistoryFlushPolicy.maxBytes` bounds them).
    private(set) var bytes = 0

    var isEmpty: Bool { history.isEmpty && imLogs.isEmpty }

    func add(_ row: RoomHistoryStore.Row) {
        history.append(row)
        bytes += row.item.estimatedBytes
    }

    func add(_ item: ImLogRow) {
        imLogs.append(item)
        bytes += item.estimatedBytes
    }

    /// Moves the waiting history rows and IM log items into `batch`.
    func takeHistory(into batch: inout StorageBatch) {
        batch.history.append(contentsOf: history)
        history.removeAll(keepingCapacity: true)
        batch.imLogs.append(contentsOf: imLogs)
        imLogs.removeAll(keepingCapacity: true)
        bytes = 0
    }

    /// Hands the waiting history rows to the database.
    func writeHistory(to database: NodeDatabase) throws {
        var batch = StorageBatch()
        takeHistory(into: &batch)
        try database.commit(batch)
    }
}

/// When applied history rows go to the database. Every node holds replicas of many rooms, and each room's
/// rows live on their own page of the history table, so writing them with every group commit rewrote a page
/// per busy room per cycle; gathered over a few ticks, one page takes many rows.
struct HistoryFlushPolicy {
    /// Rows wait at most this many ticks, and at most this many bytes of them wait.
    var everyTicks: Int
    /// Handing them over is cheap (the history database writes on its own thread); more per flush make
    /// fewer, larger chunks per room: 1,024 rows until session 7 cost ~15 % more node CPU at 1,000 clients
    /// than 4,096; at 1,000 busy rooms of 1 KB messages 4,096 rows was still about one row per room per flush
    /// and the writer took 44 % of a node (session 31, docs/benchmarks.md). SPEC D1: bounded by bytes.
    var maxBytes = 4 << 20
    // A history read that reaches past a room's in-memory window hands the waiting rows over first
    // (`HistoryPages`), so the store holds every row that left a window when the read runs.
}

/// What a proposer of a room command hears back: what applying it did, or why it could not be applied.
public typealias ProposalCompletion = (Result<ApplyOutcome, ClusterError>) -> Void
