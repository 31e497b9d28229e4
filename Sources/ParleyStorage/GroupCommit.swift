import Foundation

/// One transaction for the writes of several Raft loops that arrive together (issue 35, docs/cores.md): a
/// node's loops each commit their own ready cycle's batch, and SQLite takes one writer at a time. The first
/// to arrive writes; the batches that arrive while it syncs wait, and the first of them to wake writes them
/// all in one transaction and one fsync, so K loops pay about two syncs' wait each, not K. Each caller returns
/// once its batch is durable (or with the transaction's error), as a lone commit does: the Ready contract of
/// every loop is unchanged. With one loop there is never anyone waiting, and it costs a lock.
final class GroupCommit: @unchecked Sendable {
    private let condition = NSCondition()
    private var waiting: [(ticket: UInt64, batch: StorageBatch)] = []
    /// Batches written (or failed) by another caller, by ticket.
    private var finished: [UInt64: Result<Void, any Error>] = [:]
    private var writing = false
    private var nextTicket: UInt64 = 0
    /// Transactions that carried more than one loop's batch (for tests and the benchmarks' notes).
    private var joinedTransactions = 0

    /// Writes `batch` with whatever else is waiting, through `write`; returns when it is written.
    func commit(_ batch: StorageBatch, write: (StorageBatch) throws -> Void) throws {
        condition.lock()
        nextTicket += 1
        let ticket = nextTicket
        waiting.append((ticket, batch))
        while writing, finished[ticket] == nil { condition.wait() }
        if let done = finished.removeValue(forKey: ticket) {
            condition.unlock()
            return try done.get()
        }
        writing = true
        let taken = waiting
        waiting = []
        if taken.count > 1 { joinedTransactions += 1 }
        condition.unlock()

        var joined = taken[0].batch
        for other in taken.dropFirst() { joined.join(other.batch) }
        let result = Result { try write(joined) }

        condition.lock()
        writing = false
        for t in taken where t.ticket != ticket { finished[t.ticket] = result }
        condition.broadcast()
        condition.unlock()
        try result.get()
    }

    /// Batches waiting for the transaction being written (tests).
    var waitingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiting.count
    }

    var joinedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return joinedTransactions
    }
}
