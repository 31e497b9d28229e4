import ParleyRooms
import ParleyStorage

/// N5 / X2: a history read that reaches past a room's in-memory window is completed from the node's durable
/// history store, on the replica that answers the proposer (reads change nothing, so replicas need not agree
/// on how they were answered). What to read is decided on the Raft loop from the room as it is when the read
/// is answered (`plan`); the store is read on its own thread and the answer comes back to the loop
/// (`HistoryPages`): the loop never waits on SQLite for a reader (issue 34).
struct RoomHistoryRead: Sendable {
    enum Query: Sendable {
        /// Older items below the window, oldest first (`after` exclusive), ahead of the window's `items`.
        case olderAscending(after: Int64)
        /// Older items below the window, newest first, after the window's `items`: at most `limit`.
        case olderDescending(after: Int64, before: Int64, limit: Int)
        /// X2: every item after `afterSeq`, when the store still holds the next one.
        case since(afterSeq: UInt64, notBefore: Int64, limit: Int)
    }

    var roomId: String
    var query: Query
    /// The window's part of the answer, and the answer as it stands if the store cannot be read.
    var items: [HistoryItem]
    var types: [MessageType]
    var limit: Int
    var belowSeq: UInt64
    var notBefore: Int64
    var fallback: ApplyOutcome

    /// What to read from the store to finish `outcome`, or nil when the window answered it whole.
    static func plan(_ command: RoomCommand, _ outcome: ApplyOutcome, state: RoomsState, now: Int64) -> RoomHistoryRead? {
        let notBefore = now - state.limits.historyRetentionMillis
        switch command {
        case .fetchHistory(let q):
            guard case .success(.history(let items)) = outcome.result,
                  let window = state.historyWindow(roomId: q.roomId), window.droppedThroughSeq > 0 else { return nil }
            // Everything older than the window is below its oldest seq (or at most the last dropped one).
            let below = window.oldestSeq ?? (window.droppedThroughSeq + 1)
            let query: Query
            if q.ascending {
                // Older items (below the window) with a time after startTime come before the window's.
                query = .olderAscending(after: max(q.startTime, notBefore - 1))
            } else {
                guard items.count < q.limit else { return nil }
                query = .olderDescending(after: notBefore - 1, before: q.startTime == 0 ? .max : q.startTime,
                                         limit: q.limit - items.count)
            }
            return RoomHistoryRead(roomId: q.roomId, query: query, items: items, types: q.types, limit: q.limit,
                                   belowSeq: below, notBefore: notBefore, fallback: outcome)
        case .historySince(let roomId, let after, let limit):
            guard outcome.errorCode == .historyGone else { return nil }
            return RoomHistoryRead(roomId: roomId, query: .since(afterSeq: after, notBefore: notBefore, limit: limit),
                                   items: [], types: [], limit: limit, belowSeq: .max, notBefore: notBefore, fallback: outcome)
        default:
            return nil
        }
    }

    /// The answer, from the store's rows and the window's items.
    func complete(_ store: HistoryReader) throws -> ApplyOutcome {
        switch query {
        case .olderAscending(let after):
            let older = try store.page(roomId: roomId, after: after, before: .max, belowSeq: belowSeq, types: types,
                                       ascending: true, limit: limit)
            return ApplyOutcome(result: .success(.history(Array((older + items).prefix(limit)))), events: [])
        case .olderDescending(let after, let before, let count):
            let older = try store.page(roomId: roomId, after: after, before: before, belowSeq: belowSeq, types: types,
                                       ascending: false, limit: count)
            return ApplyOutcome(result: .success(.history(items + older)), events: [])
        case .since(let afterSeq, let notBefore, let limit):
            guard let oldest = try store.oldestSeq(roomId: roomId, notBefore: notBefore), oldest <= afterSeq + 1 else {
                return fallback
            }
            let rows = try store.since(roomId: roomId, afterSeq: afterSeq, belowSeq: .max, notBefore: notBefore, limit: limit)
            return rows.isEmpty ? fallback : ApplyOutcome(result: .success(.history(rows)), events: [])
        }
    }
}
