import ParleyRooms
import ParleyStorage

/// N5 / X2: history reads that reach past a room's in-memory window are completed from the node's durable
/// history store, on the replica that answers the proposer (reads change nothing, so replicas need not agree
/// on how they were answered). `writeWaitingRows` runs before the store is read: applied rows are written a
/// few ticks late, and some may have left the window already.
enum RoomHistoryReads {
    static func complete(_ command: RoomCommand, _ outcome: ApplyOutcome, state: RoomsState, now: Int64,
                         store: RoomHistoryStore, writeWaitingRows: () throws -> Void) -> ApplyOutcome {
        switch command {
        case .fetchHistory(let q):
            guard case .success(.history(let items)) = outcome.result,
                  let window = state.historyWindow(roomId: q.roomId), window.droppedThroughSeq > 0 else { return outcome }
            let notBefore = now - state.limits.historyRetentionMillis
            // Everything older than the window is below its oldest seq (or at most the last dropped one).
            let below = window.oldestSeq ?? (window.droppedThroughSeq + 1)
            do {
                try writeWaitingRows()
                if q.ascending {
                    // Older items (below the window) with a time after startTime come before the window's.
                    let older = try store.page(roomId: q.roomId, after: max(q.startTime, notBefore - 1), before: .max,
                                               belowSeq: below, types: q.types, ascending: true, limit: q.limit)
                    return ApplyOutcome(result: .success(.history(Array((older + items).prefix(q.limit)))), events: [])
                }
                guard items.count < q.limit else { return outcome }
                let start = q.startTime == 0 ? Int64.max : q.startTime
                let older = try store.page(roomId: q.roomId, after: notBefore - 1, before: start, belowSeq: below,
                                           types: q.types, ascending: false, limit: q.limit - items.count)
                return ApplyOutcome(result: .success(.history(items + older)), events: [])
            } catch {
                return outcome  // the in-memory answer stands if the store cannot be read
            }
        case .historySince(let roomId, let after, let limit):
            guard outcome.errorCode == .historyGone else { return outcome }
            let notBefore = now - state.limits.historyRetentionMillis
            guard (try? writeWaitingRows()) != nil, let oldest = try? store.oldestSeq(roomId: roomId, notBefore: notBefore), oldest <= after + 1,
                  let rows = try? store.since(roomId: roomId, afterSeq: after, belowSeq: .max, notBefore: notBefore,
                                              limit: limit), !rows.isEmpty else { return outcome }
            return ApplyOutcome(result: .success(.history(rows)), events: [])
        default:
            return outcome
        }
    }
}
