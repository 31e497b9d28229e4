import ParleyHost
import NIOCore
import ParleyRaft
import ParleyPlacement

/// Issue 35: this node's own edge reads the shards its replicas here feed in one poll per loop, not one per
/// shard. At 64 writers on 64 shards each shard's page held about one event, and every page paid a parked
/// poll, a promise, a task resumed on the pool, an actor hop and a hop back here for the next poll; a batched
/// poll pays those once per ready cycle that applied events for the edge.
extension RaftDriver {
    /// What a batched poll answers for one of its shards.
    public enum LocalFeedAnswer: Sendable {
        /// The shard's events after the asked cursor (or a gap).
        case page(ShardEventPage)
        /// Poll this shard alone (`events`): this node holds no replica of it any more, or its replica knows
        /// no leader, or it follows and has not yet carried the edge's lease to the leader — the cases the
        /// single poll handles.
        case alone
    }

    /// Several shards' events after their cursors, from this node's own replicas on this loop, for this node's
    /// own edge `edgeId`. Answers at once with every shard that has events (or a gap) or must be polled alone
    /// (shards left out of an answer are simply polled again); else parks until some of them apply events,
    /// `waitMillis` runs out (answered with nothing) or the edge `nudgeLocalFeed`s. Looks at every shard it names
    /// at most once a second (renewing the edge's lease on each, as a single poll does, and handing back those
    /// it cannot feed) and in between only at those that applied events since the edge's last answer, so a
    /// poll's cost follows the events, not the number of shards (`EdgeFeedBoard.shardsToLook`).
    public func localEvents(_ cursors: [ShardID: LogIndex], edgeId: String, waitMillis: Int)
        -> EventLoopFuture<[ShardID: LocalFeedAnswer]> {
        loop.flatSubmit {
            self.pollHereBatched(cursors, edgeId: edgeId, waitMillis: min(max(0, waitMillis), Self.maxPollWaitMillis))
        }
    }

    /// Answers `edgeId`'s parked batched poll now (with nothing), or its next one at once when none is parked:
    /// the edge has a shard to add to it.
    public func nudgeLocalFeed(edgeId: String) {
        loop.execute {
            self.feeds.nudge(edge: edgeId)?.promise.succeed([:])
        }
    }

    private func pollHereBatched(_ cursors: [ShardID: LogIndex], edgeId: String, waitMillis: Int)
        -> EventLoopFuture<[ShardID: LocalFeedAnswer]> {
        loop.preconditionInEventLoop()
        guard driving else {
            // A stopped driver feeds no one: each shard's single poll finds another replica.
            return loop.makeSucceededFuture(cursors.mapValues { _ in .alone })
        }
        let now = Self.now()
        var answers: [ShardID: LocalFeedAnswer] = [:]
        for shard in feeds.shardsToLook(edge: edgeId, naming: cursors, now: now) {
            let cursor = cursors[shard]!
            guard let page = host.eventPage(shard: shard, after: cursor) else {
                answers[shard] = .alone
                continue
            }
            let following = !host.isLeader(of: shard) && page.leader != nodeID
            // A follower feeds this edge only once the single poll has begun carrying its lease to the leader.
            if following && (page.leader == 0 || !feeds.isFedHere(shard: shard, edge: edgeId)) {
                answers[shard] = .alone
                continue
            }
            feeds.renew(shard: shard, edge: edgeId, now: now)
            if !page.batches.isEmpty || page.gap { answers[shard] = .page(page) }
        }
        let nudged = feeds.takeNudge(edge: edgeId)
        guard answers.isEmpty, !nudged, waitMillis > 0 else { return loop.makeSucceededFuture(answers) }
        let promise = loop.makePromise(of: [ShardID: LocalFeedAnswer].self)
        let earlier = feeds.park(edge: edgeId, EdgeFeedBoard.BatchedPoll(
            cursors: cursors, promise: promise, deadline: .now() + .milliseconds(Int64(waitMillis))))
        earlier?.promise.succeed([:])
        return promise.futureResult
    }

    /// Answers the parked batched polls that `shards` (which applied events in the last ready cycle) answer.
    func wakeBatchedPolls(_ shards: Set<ShardID>) {
        guard !shards.isEmpty else { return }
        feeds.eventsApplied(shards)
        guard !feeds.batched.isEmpty else { return }
        var answered: [(EdgeFeedBoard.BatchedPoll, [ShardID: LocalFeedAnswer])] = []
        for (edge, poll) in feeds.batched {
            var answers: [ShardID: LocalFeedAnswer] = [:]
            for shard in shards {
                guard let cursor = poll.cursors[shard], let page = host.eventPage(shard: shard, after: cursor),
                      !page.batches.isEmpty || page.gap else { continue }
                answers[shard] = .page(page)
            }
            guard !answers.isEmpty, let taken = feeds.takeBatched(edge: edge) else { continue }
            answered.append((taken, answers))
        }
        // Completed once the book is settled: a completion may park the next poll.
        for (poll, answers) in answered { poll.promise.succeed(answers) }
    }

    /// Answers the batched polls whose wait ran out (at the driver's stop, all of them) with nothing.
    func endBatchedPolls(now: NIODeadline) {
        for poll in feeds.unparkExpiredBatched(now: now) { poll.promise.succeed([:]) }
    }
}
