import ParleyHost
import NIOCore
import ParleyRaft
import ParleyPlacement

/// The driver's book of the edges' event feeds: parked long-polls per shard, when each edge last polled each
/// shard (its lease), and since when this node leads each shard. Touched only on the driver's loop.
final class EdgeFeedBoard {
    struct Poll {
        var cursor: LogIndex
        var promise: EventLoopPromise<ShardEventPage>
        /// When it is answered with what the replica has then (most often nothing): found by the driver's tick,
        /// so a poll waits at most one tick past it. A timer per poll cost its scheduling and cancelling on
        /// every page the feed delivered (issue 35: 2.7 % of the Raft loop's samples at 64 writers).
        var deadline: NIODeadline
        /// Its answer should the replica be gone by then.
        var emptyPage: ShardEventPage
    }

    /// How long an edge may go without polling a shard before the shard's leader ends its sessions there.
    var leaseMillis: Int64
    /// How long after this node starts leading a shard an edge may still be waiting on the old leader: its
    /// poll there ends only when the call times out (`RaftDriver.pollCallTimeout`). A new leader's lease
    /// period starts after it.
    var takeoverMillis: Int64
    /// A gap this long between two sweeps means this node's loop stood still (a SIGSTOP, a VM pause, a
    /// stuck disk): time it did not observe does not count against the edges.
    var stallMillis: Int64 = 3_000
    private var lastSweep: Int64?
    /// The parked polls of each shard, oldest first (a few: one per edge fed here).
    private(set) var polls: [ShardID: [Poll]] = [:]
    /// No parked poll's deadline is earlier.
    private var earliestDeadline = NIODeadline.distantFuture
    /// Wall-clock ms of each edge's last poll, per shard.
    private var lastPoll: [ShardID: [String: Int64]] = [:]
    private var leaderSince: [ShardID: Int64] = [:]
    /// Issue 35: per shard this node follows, the edges (this node's own) its replica feeds, with when each
    /// one's lease was last carried to the leader (when each last polled is `lastPoll`'s).
    private var fed: [ShardID: [String: Int64]] = [:]
    /// "shard/edge" keys whose sessions are being ended, so one expiry is proposed at a time.
    private var expiring = Set<String>()
    /// Issue 35: the parked batched polls of this node's own edge (`RaftDriver.localEvents`), by edge — one
    /// per edge and loop — and the edges that asked for theirs to be answered before it parked.
    private(set) var batched: [String: BatchedPoll] = [:]
    private var nudged = Set<String>()
    /// Per edge that polls batched: the shards that applied events while none of its polls was parked here
    /// (checked by its next poll), and when its next poll must look at every shard it names (`needsFullLook`).
    private var eventsSince: [String: Set<ShardID>] = [:]
    private var fullLookDue: [String: Int64] = [:]
    /// How often a batched poll looks at every shard it names — their leases renewed, the replicas that can no
    /// longer feed the edge handed back — rather than only at those that applied events (issue 35: a node's
    /// edge may read hundreds of shards here, and a poll goes out per ready cycle). Well inside a lease.
    static let fullLookMillis: Int64 = 1_000

    /// A batched poll: several shards' cursors, answered with the pages of those that apply events.
    struct BatchedPoll {
        var cursors: [ShardID: LogIndex]
        var promise: EventLoopPromise<[ShardID: RaftDriver.LocalFeedAnswer]>
        var deadline: NIODeadline
    }

    init(leaseMillis: Int64, takeoverMillis: Int64 = 0) {
        self.leaseMillis = leaseMillis
        self.takeoverMillis = takeoverMillis
    }

    /// Called once at the start of each expiry sweep. After a stall every lease this node grants restarts
    /// now: edges polled into silence while it stood, and a leader that was paused (and may have been
    /// replaced without knowing it yet) must not end their sessions for it.
    func sweepStarting(now: Int64) {
        if let last = lastSweep, now - last > stallMillis {
            for shard in leaderSince.keys { leaderSince[shard] = now }
        }
        lastSweep = now
    }

    func renew(shard: ShardID, edge: String, now: Int64) {
        lastPoll[shard, default: [:]][edge] = now
    }

    /// Records that this node's follower replica feeds `edge` (its poll was `renew`ed); true when it was not
    /// fed here yet (its lease is carried now, and marked so).
    @discardableResult
    func fedHere(shard: ShardID, edge: String, now: Int64) -> Bool {
        guard fed[shard]?[edge] == nil else { return false }
        fed[shard, default: [:]][edge] = now
        return true
    }

    /// The (shard, edge) leases to carry to the leaders now: polled here within a lease, last carried at least
    /// `every` ago (marked carried). An edge silent for a lease is forgotten: its lease runs out at the leader.
    func leasesToCarry(now: Int64, every: Int64) -> [(ShardID, String)] {
        var out: [(ShardID, String)] = []
        for shard in fed.keys.sorted() {
            var edges = fed[shard]!
            for (edge, carried) in edges.sorted(by: { $0.key < $1.key }) {
                if now - (lastPoll[shard]?[edge] ?? 0) > leaseMillis {
                    edges[edge] = nil
                } else if now - carried >= every {
                    edges[edge] = now
                    out.append((shard, edge))
                }
            }
            fed[shard] = edges.isEmpty ? nil : edges
        }
        return out
    }

    func park(shard: ShardID, _ poll: Poll) {
        polls[shard, default: []].append(poll)
        earliestDeadline = min(earliestDeadline, poll.deadline)
    }

    /// Takes the shard's parked polls that `page` answers (it returns nil for a poll it leaves waiting), with
    /// their answers. The caller completes them after this returns: a completion may park another poll.
    func unpark(shard: ShardID, answering page: (Poll) -> ShardEventPage?) -> [(Poll, ShardEventPage)] {
        guard let parked = polls.removeValue(forKey: shard) else { return [] }
        var answered: [(Poll, ShardEventPage)] = []
        var waiting: [Poll] = []
        for poll in parked {
            if let answer = page(poll) { answered.append((poll, answer)) } else { waiting.append(poll) }
        }
        if !waiting.isEmpty { polls[shard] = waiting }
        return answered
    }

    /// Takes every poll whose deadline is `now` or earlier (all of them with `.distantFuture`), shard by shard.
    func unparkExpired(now: NIODeadline) -> [(ShardID, Poll)] {
        guard now >= earliestDeadline else { return [] }
        var expired: [(ShardID, Poll)] = []
        var earliest = NIODeadline.distantFuture
        for shard in polls.keys.sorted() {
            var waiting = polls.removeValue(forKey: shard)!
            waiting.removeAll { poll in
                if poll.deadline <= now { expired.append((shard, poll)); return true }
                earliest = min(earliest, poll.deadline)
                return false
            }
            if !waiting.isEmpty { polls[shard] = waiting }
        }
        earliestDeadline = earliest
        return expired
    }

    /// Whether this node's follower replica already feeds `edge` (its lease is being carried to the leader).
    func isFedHere(shard: ShardID, edge: String) -> Bool {
        fed[shard]?[edge] != nil
    }

    /// Parks `edge`'s batched poll; an earlier one still parked (there should be none) is handed back to be
    /// answered with nothing.
    func park(edge: String, _ poll: BatchedPoll) -> BatchedPoll? {
        batched.updateValue(poll, forKey: edge)
    }

    /// Takes `edge`'s parked batched poll, or — when none is parked — remembers to answer its next one at once.
    /// Either way the next poll looks at every shard it names (a shard joined it).
    func nudge(edge: String) -> BatchedPoll? {
        fullLookDue[edge] = 0
        if let parked = batched.removeValue(forKey: edge) { return parked }
        nudged.insert(edge)
        return nil
    }

    /// Which of a batched poll's shards `edge`'s poll must look at now: all of them once a `fullLookMillis` (or
    /// after a nudge), else those that applied events since its last poll was answered. Resets both.
    func shardsToLook(edge: String, naming cursors: [ShardID: LogIndex], now: Int64) -> [ShardID] {
        let since = eventsSince.updateValue([], forKey: edge) ?? []
        if now >= fullLookDue[edge] ?? 0 {
            fullLookDue[edge] = now + Self.fullLookMillis
            return Array(cursors.keys)
        }
        return since.filter { cursors[$0] != nil }
    }

    /// Shards that applied events: each edge that polls batched and has no poll parked checks them next time.
    func eventsApplied(_ shards: Set<ShardID>) {
        for edge in eventsSince.keys where batched[edge] == nil { eventsSince[edge]!.formUnion(shards) }
    }

    /// Whether `edge` was nudged since its last batched poll (forgotten once asked).
    func takeNudge(edge: String) -> Bool {
        nudged.remove(edge) != nil
    }

    /// Takes the batched polls whose deadline is `now` or earlier (a few at most: looked at every tick).
    func unparkExpiredBatched(now: NIODeadline) -> [BatchedPoll] {
        guard !batched.isEmpty else { return [] }
        var expired: [BatchedPoll] = []
        for (edge, poll) in batched where poll.deadline <= now {
            expired.append(poll)
            batched[edge] = nil
        }
        return expired
    }

    /// Takes `edge`'s parked batched poll.
    func takeBatched(edge: String) -> BatchedPoll? {
        batched.removeValue(forKey: edge)
    }

    /// The edges whose lease on `shard` ran out, given whether this node leads it and which edges hold
    /// sessions there. A new leader gives every edge a full lease from its own start plus the takeover time,
    /// since polls went to the old leader until now and may still be waiting there.
    func expired(shard: ShardID, isLeader: Bool, edges: [String], now: Int64) -> [String] {
        guard isLeader else {
            leaderSince[shard] = nil
            return []
        }
        let since = leaderSince[shard] ?? (now + takeoverMillis)
        leaderSince[shard] = since
        let seen = lastPoll[shard] ?? [:]
        var out: [String] = []
        for edge in edges where now - max(seen[edge] ?? 0, since) > leaseMillis {
            if expiring.insert("\(shard)/\(edge)").inserted { out.append(edge) }
        }
        // Forget edges that hold no sessions here and have been silent for long: memory stays bounded.
        if seen.count > edges.count {
            let live = Set(edges)
            lastPoll[shard] = seen.filter { live.contains($0.key) || now - $0.value < 10 * leaseMillis }
        }
        return out
    }

    func expiryDone(shard: ShardID, edge: String) {
        expiring.remove("\(shard)/\(edge)")
    }
}
