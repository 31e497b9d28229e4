import ParleyCluster
import ParleyPlacement
import ParleyRooms
import Synchronization

/// What a connection's own event loop must know to answer its room commands without the `Edge` actor (issue
/// 35 item 3): whether the edge accepted its `hello`, whether it is closing, the account it entered as, the
/// rooms it is in, the app its budget is charged to and its request bucket (SPEC A1).
///
/// The edge writes it (hello, enter, leave, close, IM login) and the loop reads it, under one lock. The edge
/// changes it inside a barrier request (`hello`, `enter`, `exit`, `imLogin`: nothing else of the connection
/// runs meanwhile) or on its own (a kick, a close), so a request started after a barrier sees what the barrier
/// did, and one racing a kick goes either way — as it did through the actor, and the shard answers 13100 for a
/// session it no longer holds.
final class ConnectionSessions: Sendable {
    struct State {
        var helloDone = false
        var closing = false
        /// Set by the first successful enter; every later enter must use the same account and mode (4013).
        var account: (userId: String, mode: AuthMode, appKey: String)?
        /// Rooms entered or being entered (app-scoped ids).
        var rooms: Set<String> = []
        /// The connection's IM login: who its IM ops act for (issue 35: a one-to-one message is sent from the
        /// connection's loop).
        var im: (appKey: String, account: String, scoped: String, namespace: String)?
        /// The app of the connection's IM login (its budget applies once it has one).
        var imApp: String? { im?.appKey }
        /// A1: the connection's request bucket, made with its first request.
        var requests: TokenBucket?

        /// The app whose request budget the connection spends (none yet: the node's default).
        var budgetApp: String? { account?.appKey ?? imApp }
    }

    private let state = Mutex(State())

    func read<T>(_ body: (State) -> T) -> T {
        state.withLock { body($0) }
    }

    func change<T>(_ body: (inout State) -> T) -> T {
        state.withLock { body(&$0) }
    }

    /// A1: takes one token under `budget`, or says how long until one is there (ms).
    func takeRequestToken(_ budget: ConnectionBudget, now: Int64) -> Int64? {
        state.withLock { s in
            var bucket = s.requests ?? TokenBucket(burst: budget.burst, now: now)
            let wait = bucket.take(rate: budget.requestsPerSecond, burst: budget.burst, now: now)
            s.requests = bucket
            return wait
        }
    }
}
