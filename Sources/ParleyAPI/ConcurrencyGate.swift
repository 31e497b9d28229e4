import Synchronization

/// Counts work under way and refuses more than a limit (no queue: a caller over the limit is told to retry).
final class ConcurrencyGate: Sendable {
    private let count = Mutex(0)

    func enter(limit: Int) -> Bool {
        count.withLock { n in
            guard n < limit else { return false }
            n += 1
            return true
        }
    }

    func leave() { count.withLock { $0 -= 1 } }
}
