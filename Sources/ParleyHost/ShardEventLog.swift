import Collections
import ParleyRaft
import ParleyRooms
import ParleyShardState

/// The recent room events of one shard replica, by log index: what edges poll (`RaftDriver.events`).
///
/// Every replica applies the same entries, so the same index names the same events on every replica and an
/// edge can switch replicas with its cursor. The log is complete only after `completeAfter`: entries at or
/// before it were never seen here as events (the replica started from a snapshot) or were evicted to bound
/// memory; a cursor before it gets a page marked `gap`.
final class ShardEventLog {
    private(set) var batches: Deque<ShardEventBatch> = []
    /// Every batch with an index above this is held (until evicted, which raises it).
    private(set) var completeAfter: LogIndex
    /// The replica's applied index as last reported.
    private(set) var applied: LogIndex
    private var eventCount = 0
    /// SPEC D1: the events' estimated bytes held (`RoomEvent.estimatedBytes`).
    private(set) var bytes = 0
    /// Each held batch's estimated bytes, in the batches' order.
    private var batchBytes: Deque<Int> = []
    let maxEvents: Int
    let maxBytes: Int

    init(applied: LogIndex, maxEvents: Int = 50_000, maxBytes: Int = 1 << 20) {
        completeAfter = applied
        self.applied = applied
        self.maxEvents = maxEvents
        self.maxBytes = maxBytes
    }

    /// Records an applied entry (its events may be empty).
    func applied(_ index: LogIndex, _ events: [RoomEvent], im: [ImFeedEvent] = []) {
        assert(index > applied, "applied indexes go forward")
        applied = index
        guard !events.isEmpty || !im.isEmpty else { return }
        let size = events.reduce(0) { $0 + $1.estimatedBytes } + im.reduce(0) { $0 + $1.estimatedBytes }
        batches.append(ShardEventBatch(index: index, events: events, im: im))
        batchBytes.append(size)
        eventCount += events.count + im.count
        bytes += size
        while eventCount > maxEvents || bytes > maxBytes, batches.count > 1, let first = batches.popFirst() {
            eventCount -= first.events.count + first.im.count
            bytes -= batchBytes.removeFirst()
            completeAfter = first.index
        }
    }

    /// The replica was restored from a snapshot at `index`: events up to it never passed here.
    func restored(at index: LogIndex) {
        batches.removeAll()
        batchBytes.removeAll()
        eventCount = 0
        bytes = 0
        completeAfter = index
        applied = index
    }

    /// Batches after `cursor` (at most `limit`), the next cursor, and whether some were lost.
    /// A nil cursor starts at the present.
    func page(after cursor: LogIndex?, limit: Int = 1_000) -> (batches: [ShardEventBatch], cursor: LogIndex, gap: Bool) {
        guard let cursor else { return ([], applied, false) }
        let gap = cursor < completeAfter
        // Binary search: the first batch after the cursor.
        var lo = 0, hi = batches.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if batches[mid].index <= cursor { lo = mid + 1 } else { hi = mid }
        }
        let end = min(batches.count, lo + limit)
        let out = Array(batches[lo..<end])
        // Past everything held: the cursor moves to the applied index (entries without events), never back.
        let next = end < batches.count ? out.last!.index : max(cursor, applied)
        return (out, next, gap)
    }
}
