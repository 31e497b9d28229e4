import Testing
@testable import ParleyCluster
@testable import ParleyHost
import ParleyRaft
import ParleyRooms
import NIOCore
import NIOEmbedded
@testable import ParleyPlacement

/// The shard event feeds edges poll, the leases that end a dead edge's sessions, and the edge directory (E6).
@Suite struct EdgeFeedTests {
    static func event(_ seq: UInt64) -> RoomEvent {
        RoomEvent(roomId: "r", seq: seq, audience: .room, kind: .kicked(reason: .byManager, ext: ""))
    }

    @Test func aPageHoldsWhatWasAppliedAfterTheCursorAndTheCursorNeverGoesBack() {
        let log = ShardEventLog(applied: 10)
        #expect(log.page(after: nil) == ([], 10, false))
        log.applied(11, [Self.event(1)])
        log.applied(12, [])
        log.applied(13, [Self.event(2), Self.event(3)])
        let all = log.page(after: 10)
        #expect(all.batches.map(\.index) == [11, 13] && all.cursor == 13 && !all.gap)
        #expect(log.page(after: 11).batches.map(\.index) == [13])
        #expect(log.page(after: 13) == ([], 13, false))
        // A cursor from a replica that is further ahead stays where it is.
        #expect(log.page(after: 20) == ([], 20, false))
        // Entries without events still move the cursor on.
        log.applied(14, [])
        #expect(log.page(after: 13) == ([], 14, false))
        // Paging: a limit stops at the last batch returned.
        let first = log.page(after: 10, limit: 1)
        #expect(first.batches.map(\.index) == [11] && first.cursor == 11)
    }

    @Test func X2_aCursorBeforeWhatTheReplicaHoldsIsAGap() {
        let log = ShardEventLog(applied: 100)
        log.applied(101, [Self.event(1)])
        let page = log.page(after: 50)
        #expect(page.gap && page.batches.map(\.index) == [101])
        // Eviction keeps memory bounded and moves the complete point.
        let small = ShardEventLog(applied: 0, maxEvents: 3)
        for i in 1...5 { small.applied(UInt64(i), [Self.event(UInt64(i))]) }
        #expect(small.batches.count == 3 && small.completeAfter == 2)
        #expect(small.page(after: 1).gap && !small.page(after: 2).gap)
        // A snapshot install restarts the log at its index.
        small.restored(at: 40)
        #expect(small.page(after: 5).gap && small.page(after: 40) == ([], 40, false))
    }

    /// SPEC D1: a feed is bounded by bytes as well as by count: big events push old ones out sooner, and what
    /// went is a gap for a cursor before it (the edge then reads the rooms' history).
    @Test func D1_aFeedHoldsAtMostItsBytes() {
        let body = String(repeating: "x", count: 1_000)
        func message(_ seq: UInt64) -> RoomEvent {
            RoomEvent(roomId: "r", seq: seq, audience: .room, kind: .message(ChatMessage(
                seq: seq, serverId: seq, time: 1, senderId: "u", senderNickname: "", senderAvatar: "", senderRoomExt: "",
                type: .text, clientMessageId: "", body: body, ext: "")))
        }
        let log = ShardEventLog(applied: 0, maxBytes: 16 << 10)
        for i in 1...100 { log.applied(UInt64(i), [message(UInt64(i))]) }
        #expect(log.bytes <= 16 << 10 && log.bytes > 12 << 10)
        #expect(log.batches.count < 16 && log.batches.last?.index == 100)
        #expect(log.completeAfter == log.batches.first!.index - 1)
        #expect(log.page(after: 50).gap && !log.page(after: log.completeAfter).gap)
        // One event larger than the bound is still held (the newest batch always is).
        let tiny = ShardEventLog(applied: 0, maxBytes: 512)
        tiny.applied(1, [message(1)])
        #expect(tiny.batches.count == 1)
        tiny.restored(at: 9)
        #expect(tiny.bytes == 0)
    }

    @Test func E5_aSilentEdgeExpiresOnlyOnTheLeaderAndOnlyOnceAtATime() {
        let board = EdgeFeedBoard(leaseMillis: 1_000)
        // A follower never expires anyone.
        #expect(board.expired(shard: 0, isLeader: false, edges: ["e1"], now: 10_000).isEmpty)
        // A new leader gives every edge a full lease from its own start.
        #expect(board.expired(shard: 0, isLeader: true, edges: ["e1", "e2"], now: 20_000).isEmpty)
        board.renew(shard: 0, edge: "e1", now: 20_900)
        #expect(board.expired(shard: 0, isLeader: true, edges: ["e1", "e2"], now: 21_001) == ["e2"])
        // Proposed once; not again while the expiry is in flight.
        #expect(board.expired(shard: 0, isLeader: true, edges: ["e1", "e2"], now: 21_500).isEmpty)
        board.expiryDone(shard: 0, edge: "e2")
        #expect(board.expired(shard: 0, isLeader: true, edges: ["e1"], now: 21_800).isEmpty)
        #expect(board.expired(shard: 0, isLeader: true, edges: ["e1"], now: 22_000) == ["e1"])
        // Losing leadership resets the start.
        _ = board.expired(shard: 0, isLeader: false, edges: [], now: 30_000)
        board.expiryDone(shard: 0, edge: "e1")
        #expect(board.expired(shard: 0, isLeader: true, edges: ["e1"], now: 40_000).isEmpty)
    }

    /// Issue 16 (docs/cluster.md, "Edge leases"): a new leader's lease period starts only after the takeover
    /// time (an edge's poll may still be waiting on the old leader until its call times out), and time this
    /// node did not observe — its loop stood still — does not count against any edge.
    @Test func E5_aNewLeaderWaitsOutTheTakeoverAndAStallCountsForNoOne() {
        let board = EdgeFeedBoard(leaseMillis: 6_000, takeoverMillis: 7_500)
        var clock: Int64 = 10_000
        // The driver sweeps once a second; `stalled` skips the sweeps a paused process would miss.
        func sweep(to t: Int64, stalled: Bool = false, _ edges: [String]) -> [String] {
            var out: [String] = []
            while clock < t {
                clock = stalled ? t : min(t, clock + 1_000)
                board.sweepStarting(now: clock)
                out = board.expired(shard: 0, isLeader: true, edges: edges, now: clock)
            }
            return out
        }
        board.sweepStarting(now: clock)
        #expect(board.expired(shard: 0, isLeader: true, edges: ["e1"], now: clock).isEmpty)
        #expect(sweep(to: 17_000, ["e1"]).isEmpty, "inside the takeover")
        #expect(sweep(to: 23_000, ["e1"]).isEmpty, "takeover + lease not over")
        #expect(sweep(to: 23_600, ["e1"]) == ["e1"], "silent past both")
        board.expiryDone(shard: 0, edge: "e1")
        // e2 polled at 24 s; then this node stood still for 10 s (SIGSTOP): after it, e2 has a fresh lease.
        board.renew(shard: 0, edge: "e2", now: 24_000)
        #expect(sweep(to: 25_000, ["e2"]).isEmpty)
        #expect(sweep(to: 35_000, stalled: true, ["e2"]).isEmpty, "the stall counts for no one")
        #expect(sweep(to: 41_000, ["e2"]).isEmpty)
        #expect(sweep(to: 41_001, ["e2"]) == ["e2"], "then the lease runs again")
    }

    /// Issue 35 (docs/cluster.md, "The lease rule"): a follower that feeds its own node's edge carries that
    /// edge's lease to the leader at once when it starts, then at most every `every` while the edge polls, and
    /// forgets an edge silent for a lease (its lease then runs out at the leader, as a silent edge's should).
    @Test func E5_aFollowerCarriesTheLeasesOfTheEdgeItFeeds() {
        let board = EdgeFeedBoard(leaseMillis: 6_000)
        // A poll served here: renewed on this replica's book (when it last polled), then fed (`pollHere`).
        func poll(_ shard: ShardID, at now: Int64) -> Bool {
            board.renew(shard: shard, edge: "n2.1", now: now)
            return board.fedHere(shard: shard, edge: "n2.1", now: now)
        }
        #expect(poll(3, at: 10_000), "a new edge: its lease goes now")
        #expect(!poll(3, at: 10_500))
        #expect(poll(5, at: 10_600))
        #expect(board.leasesToCarry(now: 11_000, every: 2_000).isEmpty, "carried at the start")
        let due = board.leasesToCarry(now: 12_000, every: 2_000)
        #expect(due.map(\.0) == [3] && due.map(\.1) == ["n2.1"])
        #expect(board.leasesToCarry(now: 13_000, every: 2_000).map(\.0) == [5])
        // Shard 3's edge keeps polling (a long poll may wait 5 s between two); shard 5's stops.
        _ = poll(3, at: 15_000)
        #expect(board.leasesToCarry(now: 15_000, every: 2_000).map(\.0) == [3, 5])
        #expect(board.leasesToCarry(now: 17_000, every: 2_000).map(\.0) == [3], "shard 5's edge silent past its lease")
        // Forgotten: were it to poll again, its lease would go at once.
        #expect(poll(5, at: 17_100))
    }

    /// Parked polls end two ways: events for them (`unpark(answering:)`, which leaves the others waiting) or
    /// their deadline, found by the driver's tick (`unparkExpired`); the stop ends them all.
    @Test func parkedPollsEndOnEventsOrAtTheirDeadline() throws {
        let loop = EmbeddedEventLoop()
        defer { try? loop.syncShutdownGracefully() }
        let board = EdgeFeedBoard(leaseMillis: 1_000)
        let start = NIODeadline.now()
        func poll(_ cursor: LogIndex, waits millis: Int64) -> EdgeFeedBoard.Poll {
            EdgeFeedBoard.Poll(cursor: cursor, promise: loop.makePromise(), deadline: start + .milliseconds(millis),
                               emptyPage: ShardEventPage(shard: 1, batches: [], cursor: cursor, gap: false, leader: 0))
        }
        board.park(shard: 1, poll(10, waits: 300))
        board.park(shard: 1, poll(20, waits: 100))
        board.park(shard: 2, poll(5, waits: 200))
        #expect(board.unparkExpired(now: start + .milliseconds(50)).isEmpty)
        // Events past cursor 15 answer the first poll of shard 1, not the one already at 20.
        let answered = board.unpark(shard: 1) { $0.cursor < 15 ? $0.emptyPage : nil }
        #expect(answered.map(\.0.cursor) == [10])
        #expect(board.polls[1]?.map(\.cursor) == [20])
        for (poll, page) in answered { poll.promise.succeed(page) }
        // Each waits until its own deadline, and no longer than the first tick after it.
        let due = board.unparkExpired(now: start + .milliseconds(150))
        #expect(due.map { [UInt64($0.0), $0.1.cursor] } == [[1, 20]])
        for (_, poll) in due { poll.promise.succeed(poll.emptyPage) }
        #expect(board.unparkExpired(now: start + .milliseconds(199)).isEmpty)
        let last = board.unparkExpired(now: .distantFuture)
        #expect(last.map { [UInt64($0.0), $0.1.cursor] } == [[2, 5]])
        #expect(board.polls.isEmpty)
        for (_, poll) in last { poll.promise.succeed(poll.emptyPage) }
    }

    /// Issue 35: a node's own edge parks one batched poll per loop. A nudge answers the parked one, or — when
    /// none is parked (the next one is on its way) — the next one at once, and only that one; a batched poll
    /// ends at its deadline like a single one, and a second park of the same edge hands back the first.
    @Test func batchedPollsAreNudgedOnceAndEndAtTheirDeadline() throws {
        let loop = EmbeddedEventLoop()
        defer { try? loop.syncShutdownGracefully() }
        let board = EdgeFeedBoard(leaseMillis: 1_000)
        let start = NIODeadline.now()
        func poll(_ cursors: [ShardID: LogIndex], waits millis: Int64) -> EdgeFeedBoard.BatchedPoll {
            EdgeFeedBoard.BatchedPoll(cursors: cursors, promise: loop.makePromise(), deadline: start + .milliseconds(millis))
        }
        // No poll parked: the nudge is kept for the edge's next poll, which takes it; the one after does not.
        #expect(board.nudge(edge: "e1") == nil)
        #expect(board.takeNudge(edge: "e1"))
        #expect(!board.takeNudge(edge: "e1"))
        #expect(!board.takeNudge(edge: "e2"))
        // A parked poll is taken by the nudge, and nothing is kept for the next.
        #expect(board.park(edge: "e1", poll([1: 10, 2: 20], waits: 300)) == nil)
        let nudged = try #require(board.nudge(edge: "e1"))
        #expect(nudged.cursors == [1: 10, 2: 20])
        nudged.promise.succeed([:])
        #expect(!board.takeNudge(edge: "e1"))
        #expect(board.batched.isEmpty)
        // Two edges' polls end each at its own deadline; the stop ends the rest.
        #expect(board.park(edge: "e1", poll([1: 11], waits: 100)) == nil)
        #expect(board.park(edge: "e2", poll([3: 5], waits: 200)) == nil)
        #expect(board.unparkExpired(now: start + .milliseconds(50)).isEmpty)
        #expect(board.unparkExpiredBatched(now: start + .milliseconds(50)).isEmpty)
        let due = board.unparkExpiredBatched(now: start + .milliseconds(150))
        #expect(due.map(\.cursors) == [[1: 11]])
        for poll in due { poll.promise.succeed([:]) }
        // A second park of an edge returns the first, for its caller to answer.
        let second = poll([3: 6], waits: 250)
        let replaced = try #require(board.park(edge: "e2", second))
        #expect(replaced.cursors == [3: 5])
        replaced.promise.succeed([:])
        let rest = board.unparkExpiredBatched(now: .distantFuture)
        #expect(rest.map(\.cursors) == [[3: 6]])
        #expect(board.batched.isEmpty)
        for poll in rest { poll.promise.succeed([:]) }
    }

    /// Issue 35: a batched poll looks at every shard it names once a `fullLookMillis` or after a nudge, and in
    /// between only at the shards that applied events while none of its edge's polls was parked.
    @Test func batchedPollsLookAtEveryShardOnlyOnceASecond() throws {
        let loop = EmbeddedEventLoop()
        defer { try? loop.syncShutdownGracefully() }
        let board = EdgeFeedBoard(leaseMillis: 6_000)
        let cursors: [ShardID: LogIndex] = [1: 10, 2: 20, 3: 30]
        #expect(Set(board.shardsToLook(edge: "e", naming: cursors, now: 1_000)) == [1, 2, 3])
        // Within the second: only what applied events since (a shard the poll does not name is left out).
        board.eventsApplied([2, 7])
        #expect(board.shardsToLook(edge: "e", naming: cursors, now: 1_100) == [2])
        #expect(board.shardsToLook(edge: "e", naming: cursors, now: 1_200).isEmpty)
        // Events while a poll of the edge is parked are its answer's business, not the next poll's.
        #expect(board.park(edge: "e", EdgeFeedBoard.BatchedPoll(cursors: cursors, promise: loop.makePromise(),
                                                               deadline: .now())) == nil)
        board.eventsApplied([3])
        board.takeBatched(edge: "e")?.promise.succeed([:])
        #expect(board.shardsToLook(edge: "e", naming: cursors, now: 1_300).isEmpty)
        // A nudge (a shard joined) and a second gone by each bring back the whole look.
        _ = board.nudge(edge: "e")
        #expect(board.takeNudge(edge: "e"))
        #expect(Set(board.shardsToLook(edge: "e", naming: cursors, now: 1_400)) == [1, 2, 3])
        #expect(board.shardsToLook(edge: "e", naming: cursors, now: 2_300).isEmpty)
        #expect(Set(board.shardsToLook(edge: "e", naming: cursors, now: 2_400)) == [1, 2, 3])
    }

    @Test func E6_addressesFollowRendezvousOverLiveActiveEdges() {
        let nodes = (1...5).map { NodeRecord(id: NodeID($0), peerAddress: "10.0.0.\($0):7000", httpAddress: "10.0.0.\($0):8000") }
        let all = Set(nodes.map(\.id))
        let order = EdgeDirectory.addresses(forRoom: "lobby", nodes: nodes, reachable: all)
        #expect(order.count == 5 && Set(order).count == 5)
        // Stable: the same room gives the same order whatever the input order.
        #expect(EdgeDirectory.addresses(forRoom: "lobby", nodes: nodes.reversed(), reachable: all) == order)
        // An unreachable or draining edge is left out; the rest keep their relative order.
        let firstID = nodes.first { $0.httpAddress == order[0] }!.id
        let without = EdgeDirectory.addresses(forRoom: "lobby", nodes: nodes, reachable: all.subtracting([firstID]))
        #expect(without == Array(order.dropFirst()))
        var draining = nodes
        draining[Int(firstID) - 1].state = .draining
        #expect(EdgeDirectory.addresses(forRoom: "lobby", nodes: draining, reachable: all) == Array(order.dropFirst()))
        // Rooms spread over the edges.
        let firsts = Set((0..<200).map { EdgeDirectory.addresses(forRoom: "room-\($0)", nodes: nodes, reachable: all)[0] })
        #expect(firsts.count == 5)
    }

    /// Every replica names the same events by the same index, so an edge can move between replicas.
    @Test func X2_everyReplicaServesTheSameEventsAtTheSameIndexes() throws {
        let cluster = try InProcessCluster(shards: 1)
        try cluster.submit(.createRoom(CreateRoom(roomId: "lobby", creator: "ann", name: "Lobby")), room: "lobby")
        try cluster.submit(.enter(EnterRoom(roomId: "lobby", nickname: "Ann")), room: "lobby", as: session("ann"))
        for i in 0..<5 {
            try cluster.submit(.sendMessage(SendMessage(roomId: "lobby", body: "m\(i)")), room: "lobby", as: session("ann"))
        }
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        let pages = cluster.nodes.map { cluster.hosts[$0]!.eventPage(shard: 0, after: 0)! }
        #expect(pages[0].batches.count >= 6)
        #expect(pages.allSatisfy { $0.batches == pages[0].batches && $0.cursor == pages[0].cursor })
        #expect(pages.allSatisfy { $0.leader == cluster.leader(of: 0)! })
        // And they are the applied ones: the messages, in the order sent.
        let bodies = pages[0].batches.flatMap(\.events).compactMap { e -> String? in
            if case .message(let m) = e.kind { m.body } else { nil }
        }
        #expect(bodies == (0..<5).map { "m\($0)" })
        #expect(cluster.hosts[1]!.edgesWithSessions(shard: 0) == ["edge-1"])
    }
}
