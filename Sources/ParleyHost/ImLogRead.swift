import ParleyIM
import ParleyRooms
import ParleyStorage
import ParleyShardState

/// Issue 38 item 5 (SPEC D1): a sync that reaches past a log's in-memory window — a user's conversation log,
/// or a team's — is completed from the node's IM log store, on the replica that answers, as a room history
/// read past its window is (`RoomHistoryRead`). The state answers such a read `historyGone` while the log
/// still holds the items (`SequencedLog.isInStore`); the plan, made on the Raft loop from the state as it is
/// then, takes the window's part of the answer, and the store's rows go in front of it on the store's thread.
/// When the store lacks the item right after the reader's position (a replica filled by a snapshot stores only
/// what came with it), the answer stays `historyGone`: the reader is told, never handed a gap; and the log's
/// head as this replica can serve it (a read after the log's end: what a device asks after `historyGone`)
/// names the oldest item the store holds as `firstSeq`, so the device continues from there.
struct ImLogRead: Sendable {
    var owner: String
    var after: UInt64
    /// 0: the log's head (`firstSeq` from the store).
    var limit: Int
    /// The answer from the window (the log's items from its first in memory on), into which the store's rows go.
    var windowAnswer: ImReadResult
    var windowFirstSeq: UInt64
    var fallback: ShardOutcome

    static func plan(_ command: ShardCommand, _ outcome: ShardOutcome, state: ShardState, context: ApplyContext) -> ImLogRead? {
        guard case .im(let account, .read(let read)) = command else { return nil }
        if case .log(let a, _) = read, case .im(.success(.read(let answer))) = outcome, case .log(_, let next, _) = answer, a >= next {
            let log = state.im.user(account).log
            guard log.windowFirstSeq > log.droppedThroughSeq + 1 else { return nil }
            return ImLogRead(owner: LogOwner.user(account).storeKey, after: log.droppedThroughSeq, limit: 0, windowAnswer: answer,
                             windowFirstSeq: log.windowFirstSeq, fallback: outcome)
        }
        guard case .im(.failure(let error)) = outcome, error.code == .historyGone else { return nil }
        let owner: LogOwner, after: UInt64, limit: Int, first: UInt64, inWindow: ImRead
        switch read {
        case .log(let a, let l):
            let log = state.im.user(account).log
            guard log.isInStore(after: a) else { return nil }
            (owner, after, limit, first) = (.user(account), a, l, log.windowFirstSeq)
            inWindow = .log(after: first - 1, limit: l)
        case .team(let teamId, let a, let l), .teamLog(let teamId, let a, let l):
            guard let log = state.im.team(teamId)?.log, log.isInStore(after: a) else { return nil }
            (owner, after, limit, first) = (.team(teamId), a, l, log.windowFirstSeq)
            inWindow = if case .team = read { .team(teamId: teamId, after: first - 1, limit: l) }
                       else { .teamLog(teamId: teamId, after: first - 1, limit: l) }
        default:
            return nil
        }
        guard case .im(.success(.read(let answer))) = state.read(.im(account: account, .read(inWindow)), context: context) else { return nil }
        return ImLogRead(owner: owner.storeKey, after: after, limit: limit, windowAnswer: answer, windowFirstSeq: first,
                         fallback: outcome)
    }

    /// The answer: the store's items from `after + 1` on, as far as they run without a gap, then the window's.
    func complete(_ store: HistoryReader) throws -> ShardOutcome {
        if limit == 0, case .log(let items, let nextSeq, _) = windowAnswer {
            // The head: the oldest item from which this replica serves every item up to the window.
            let first = try store.imLogRunStart(owner: owner, below: windowFirstSeq, notBelow: after + 1)
            return .im(.success(.read(.log(items: items, nextSeq: nextSeq, firstSeq: first))))
        }
        let rows = try store.imLog(owner: owner, afterSeq: after, belowSeq: windowFirstSeq, limit: limit)
        guard rows.first?.seq == after + 1 else { return fallback }
        var count = 1
        while count < rows.count, rows[count].seq == rows[count - 1].seq + 1 { count += 1 }
        let reachesWindow = rows[count - 1].seq + 1 == windowFirstSeq
        switch windowAnswer {
        case .log(let items, let nextSeq, let firstSeq):
            var out = try rows.prefix(count).map { try ImShardState.decodeUserItem($0.bytes) }
            if reachesWindow { out += items.prefix(limit - out.count) }
            return .im(.success(.read(.log(items: out, nextSeq: nextSeq, firstSeq: firstSeq))))
        case .team(var view):
            var out = try rows.prefix(count).map { try ImShardState.decodeTeamItem($0.bytes) }
            if reachesWindow { out += view.items.prefix(limit - out.count) }
            view.items = out
            return .im(.success(.read(.team(view))))
        default:
            return fallback
        }
    }
}
