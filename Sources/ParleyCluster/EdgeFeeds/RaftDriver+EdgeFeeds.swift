import ParleyHost
import Foundation
import NIOCore
import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyTransport
import ParleyPlacement

/// The edges' event feeds (long-polled over `/rpc/v1/events` or locally) and their leases.
extension RaftDriver {
    /// A poll as it travels between nodes.
    struct EventPoll: BinaryCodable {
        var shard: ShardID
        var cursor: LogIndex?
        var edgeId: String
        var waitMillis: Int

        func encode(to w: inout ByteWriter) {
            w.write(shard)
            w.write(cursor != nil)
            w.write(cursor ?? 0)
            w.write(edgeId)
            w.write(waitMillis)
        }

        init(shard: ShardID, cursor: LogIndex?, edgeId: String, waitMillis: Int) {
            self.shard = shard
            self.cursor = cursor
            self.edgeId = edgeId
            self.waitMillis = waitMillis
        }

        init(from r: inout ByteReader) throws(CodecError) {
            shard = try r.readInt()
            let has = try r.readBool()
            let value = try r.readUInt64()
            cursor = has ? value : nil
            edgeId = try r.readString()
            waitMillis = try r.readInt()
        }
    }

    /// The body of an `/rpc/v1/events` call, for tools that poll (or renew an edge's lease) over the peer port.
    public static func eventPollBody(shard: ShardID, after cursor: LogIndex?, edgeId: String, waitMillis: Int) -> [UInt8] {
        EventPoll(shard: shard, cursor: cursor, edgeId: edgeId, waitMillis: waitMillis).encoded()
    }

    /// Longest a poll may wait: well inside the peer call timeout.
    public static let maxPollWaitMillis = 5_000
    /// How long past its wait a poll to another node may take before the edge gives up on that node and
    /// polls the next replica (a paused or cut-off leader answers nothing, and its TCP connection stays up).
    public static let pollCallGraceMillis = 1_500
    /// The longest an edge's poll can stay on a node that does not answer (the link's deadline sweep runs
    /// once a second, so one more second).
    public static let pollCallTimeoutMillis = Int64(maxPollWaitMillis + pollCallGraceMillis + 1_000)
    /// How long a follower that knows the leader holds a poll before answering with nothing and the leader's
    /// id, so an edge that lands on it moves to the leader at once instead of after a whole wait.
    static let followerPollWaitMillis = 300

    /// The shard's events after `cursor` from the replica on `node` (this node or a peer), waiting up to
    /// `waitMillis` for some. Renews `edgeId`'s lease on that replica. Fails when the node holds no replica.
    public func events(shard: ShardID, after cursor: LogIndex?, edgeId: String, waitMillis: Int,
                       at node: NodeID) -> EventLoopFuture<ShardEventPage> {
        if let other = elsewhere(shard) {
            return other.events(shard: shard, after: cursor, edgeId: edgeId, waitMillis: waitMillis, at: node).hop(to: loop)
        }
        let poll = EventPoll(shard: shard, cursor: cursor, edgeId: edgeId,
                             waitMillis: min(max(0, waitMillis), Self.maxPollWaitMillis))
        if node == nodeID { return loop.flatSubmit { self.pollHere(poll, local: true) } }
        let timeout = TimeAmount.milliseconds(Int64(poll.waitMillis + Self.pollCallGraceMillis))
        return transport.call(node, path: Self.eventsPath, body: poll.encoded(), timeout: timeout).hop(to: loop)
            .flatMapThrowing { response in
            guard response.status == 200 else { throw RouteError.peerRefused(response.status) }
            return try ShardEventPage(decoding: response.body)
        }
    }

    /// Serves a poll from this node's replica: at once when there is something (or a gap, or a start), else
    /// when the next events of the shard apply, else empty after the wait. `local`: the poll comes from this
    /// node's own edge.
    func pollHere(_ poll: EventPoll, local: Bool = false) -> EventLoopFuture<ShardEventPage> {
        loop.preconditionInEventLoop()
        // A driver that stopped (the node is stopping, or its storage failed) feeds no one — no tick would end
        // a wait, and answering at once would have the edge poll again at once: it polls another replica.
        guard driving, let page = host.eventPage(shard: poll.shard, after: poll.cursor) else {
            return loop.makeFailedFuture(ClusterError.shardNotHere(poll.shard))
        }
        let now = Self.now()
        feeds.renew(shard: poll.shard, edge: poll.edgeId, now: now)
        let following = !host.isLeader(of: poll.shard) && page.leader != nodeID
        // Issue 35: this node's own edge reads a follower that knows its leader as it would the leader — every
        // replica applies the same entries, one hop after the leader — so its feed crosses no link. Only the
        // leader's book counts for the lease, so the follower carries the edge's there (`carryLeases`).
        let fedHere = local && following && page.leader != 0
        if fedHere {
            let first = feeds.fedHere(shard: poll.shard, edge: poll.edgeId, now: now)
            if first || poll.cursor == nil {
                // A feed's start goes before its first enter: the leader must have seen the edge before it sees
                // a session of it, or its next sweep would find that session's edge silent.
                return carryLease(shard: poll.shard, edge: poll.edgeId, to: page.leader).map { page }
            }
        }
        guard page.batches.isEmpty, !page.gap, let cursor = poll.cursor, poll.waitMillis > 0 else {
            return loop.makeSucceededFuture(page)
        }
        // Another node's edge is sent to the leader soon (the page names it) rather than held for the whole
        // wait; so is this node's own while its replica knows no leader (the edge then finds one elsewhere).
        let elsewhere = following && !fedHere && (page.leader != 0 || local)
        let wait = elsewhere ? min(poll.waitMillis, Self.followerPollWaitMillis) : poll.waitMillis
        let promise = loop.makePromise(of: ShardEventPage.self)
        feeds.park(shard: poll.shard, EdgeFeedBoard.Poll(cursor: cursor, promise: promise,
                                                         deadline: .now() + .milliseconds(Int64(wait)), emptyPage: page))
        return promise.futureResult
    }

    /// Answers the parked polls of shards that applied events in the last ready cycle.
    func wakePolls() {
        let shards = host.takeShardsWithNewEvents()
        wakeBatchedPolls(shards)
        for shard in shards {
            let answered = feeds.unpark(shard: shard) { poll in
                guard let page = host.eventPage(shard: shard, after: poll.cursor), !page.batches.isEmpty || page.gap
                else { return nil }
                return page
            }
            for (poll, page) in answered { poll.promise.succeed(page) }
        }
    }

    /// Answers the polls whose wait ran out (each tick; at the driver's stop, all of them) with what the
    /// replica has for them then.
    func endPolls(now: NIODeadline = .now()) {
        endBatchedPolls(now: now)
        for (shard, poll) in feeds.unparkExpired(now: now) {
            poll.promise.succeed(host.eventPage(shard: shard, after: poll.cursor) ?? poll.emptyPage)
        }
    }

    /// On each shard this node leads, ends the sessions of edges that stopped polling (dead or cut off).
    func expireSilentEdges() {
        let now = Self.now()
        feeds.sweepStarting(now: now)
        for shard in host.shards {
            let edges = host.isLeader(of: shard) ? host.edgesWithSessions(shard: shard) : []
            for edge in feeds.expired(shard: shard, isLeader: host.isLeader(of: shard), edges: edges, now: now) {
                host.propose(.sessionLost(edgeId: edge), shard: shard, actor: .appServer, timestamp: now) { _ in
                    self.feeds.expiryDone(shard: shard, edge: edge)
                }
            }
        }
        scheduleReady()
    }

    /// Carries to each shard's leader the leases of the edges this node's followers feed (`pollHere`): a poll
    /// at the present with no wait renews a lease there, and any node version serves it. Each lease goes at a
    /// third of its length, so one lost call does not end it.
    func carryLeases() {
        let now = Self.now()
        for (shard, edge) in feeds.leasesToCarry(now: now, every: feeds.leaseMillis / 3) {
            guard let leader = host.leader(of: shard), leader != 0, leader != nodeID else { continue }
            _ = carryLease(shard: shard, edge: edge, to: leader)
        }
    }

    /// One edge's lease on `shard`, renewed at `leader`; succeeds once it answered or failed.
    private func carryLease(shard: ShardID, edge: String, to leader: NodeID) -> EventLoopFuture<Void> {
        let body = EventPoll(shard: shard, cursor: nil, edgeId: edge, waitMillis: 0).encoded()
        return transport.call(leader, path: Self.eventsPath, body: body, timeout: .seconds(2)).hop(to: loop)
            .map { _ in }.recover { _ in }
    }

    static let eventsPath = "/rpc/v1/events"
    static let feedCalls = [PeerCall(path: eventsPath, shard: PeerCall.leadingShard) { driver, request in driver.handleEventPoll(request.body) }]

    func handleEventPoll(_ body: [UInt8]) -> EventLoopFuture<PeerResponse> {
        guard let poll = try? EventPoll(decoding: body), (0..<shardMap.shardCount).contains(poll.shard),
              poll.edgeId.utf8.count <= 128 else {
            return loop.makeSucceededFuture(PeerResponse(status: 400, body: Array("bad poll".utf8)))
        }
        return loop.flatSubmit { self.pollHere(poll) }
            .map { PeerResponse(status: 200, body: $0.encoded()) }
            .recover { _ in PeerResponse(status: 404, body: Array("no replica of shard \(poll.shard) here".utf8)) }
    }
}
