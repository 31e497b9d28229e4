import Synchronization

/// The bytes of request bodies a node holds before their signature could be checked (bodies signed only by
/// CheckSum2), charged as they arrive and returned when the request is done (issue 33).
///
/// It counts bytes received, not requests begun: a stranger who announces a large body and sends nothing holds
/// none of it, so a few dozen silent sockets can no longer take every slot and starve the app servers that sign
/// their calls (the earlier gate admitted 64 bodies at once and each announced one kept its slot until the
/// request deadline). Filling the budget now takes sending that many bytes, again every request deadline.
final class UnverifiedBodyBudget: Sendable {
    private let held = Mutex(0)
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Takes `bytes` from the budget; false (nothing taken) when that would pass the limit.
    func take(_ bytes: Int) -> Bool {
        held.withLock { n in
            guard n + bytes <= limit else { return false }
            n += bytes
            return true
        }
    }

    func give(_ bytes: Int) { held.withLock { $0 -= bytes } }
}
