import Foundation
import Testing
import ParleyCluster
import ParleyHost
import ParleyRooms
import ParleyPlacement

/// The cluster side of the edge on real node processes: shard event feeds over `/rpc/v1/events` and the
/// leases that end the sessions of an edge that stopped polling (E10 / Q3 on a dead edge).
@Suite(.serialized, .timeLimit(.minutes(5))) struct EdgeFeedIntegrationTests {
    @Test func everyReplicaFeedsTheSameEventsAndALongPollWakesOnTheNextOne() async throws {
        try await withLocalCluster { cluster in
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let room = "feed-room"
        let shard = ShardMap(shardCount: 16).shard(ofRoom: room)
        let start = try await cluster.events(shard: shard, after: nil, edgeId: "it-edge", via: 1)
        _ = try await cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "ann", name: "Feed")), room: room, via: 2)
        let ann = CommandActor.session(SessionIdentity(userId: "ann", sessionId: "ann#1", edgeId: "it-edge"))
        _ = try await cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room, as: ann, via: 3)
        // Polls park at the shard's leader (a follower that knows the leader answers after 300 ms with its id,
        // docs/cluster.md "The lease rule").
        let leader = try #require(await cluster.leader(ofShard: shard))
        // Catch up with the create and the enter on the leader's replica: read on from the cursor until a page
        // is empty after the enter was among the pages read. (Asking a second time from the start could see
        // the enter applied just after the first page was read, and leave the cursor before it.)
        var cursor = start.cursor
        var seen: [RoomEvent] = []
        try await cluster.eventually("the leader to apply the enter") {
            guard let p = try? await cluster.events(shard: shard, after: cursor, edgeId: "it-edge", via: leader) else { return false }
            cursor = p.cursor
            seen += p.batches.flatMap(\.events)
            return p.batches.isEmpty && seen.contains { $0.notification?.type == .enter }
        }
        // A poll parked before the send is answered by it, well before its wait runs out. (Another event of
        // the shard may wake it first: then the next parked poll gets the message.)
        let caughtUp = cursor
        // Timed from before the poll leaves: a poll that ran out its wait took at least the wait from here.
        let parkedAt = Date(), wait = Double(RaftDriver.maxPollWaitMillis) / 1000
        async let parked = cluster.events(shard: shard, after: caughtUp, edgeId: "it-edge", waitMillis: RaftDriver.maxPollWaitMillis, via: leader)
        try await Task.sleep(for: .milliseconds(200))
        _ = try await cluster.submit(.sendMessage(SendMessage(roomId: room, body: "hello")), room: room, as: ann, via: 2)
        var page = try await parked
        func hasHello(_ p: ShardEventPage) -> Bool {
            p.batches.flatMap(\.events).contains { if case .message(let m) = $0.kind { m.body == "hello" } else { false } }
        }
        while !hasHello(page), Date().timeIntervalSince(parkedAt) < wait, !page.batches.isEmpty {
            page = try await cluster.events(shard: shard, after: page.cursor, edgeId: "it-edge", waitMillis: 2_000, via: leader)
        }
        // Woken by the send, not by the parked poll's wait (the longest a node allows, 5 s) running out: the
        // whole exchange, send included, within the wait (a loaded machine has seconds to spare).
        #expect(Date().timeIntervalSince(parkedAt) < wait, "answered \(Date().timeIntervalSince(parkedAt)) s after parking")
        #expect(hasHello(page))
        // Every replica serves the same batches from the same cursor.
        try await cluster.eventually("all replicas to apply the send") {
            var pages: [ShardEventPage] = []
            for id in cluster.ids {
                if let p = try? await cluster.events(shard: shard, after: start.cursor, edgeId: "it-edge", via: id) { pages.append(p) }
            }
            return pages.count == 3 && pages.allSatisfy { $0.batches == pages[0].batches } && pages[0].batches.count >= 2
        }
        }
    }

    @Test func theSessionsOfAnEdgeThatStopsPollingAreEndedByTheShardLeader() async throws {
        try await withLocalCluster { cluster in
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let room = "lease-room"
        _ = try await cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "ann", name: "Lease")), room: room, via: 1)
        let ghost = CommandActor.session(SessionIdentity(userId: "gus", sessionId: "gus#1", edgeId: "ghost-edge"))
        let live = CommandActor.session(SessionIdentity(userId: "liv", sessionId: "liv#1", edgeId: "it-edge"))
        _ = try await cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Gus")), room: room, as: ghost, via: 1)
        _ = try await cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Liv")), room: room, as: live, via: 1)
        // Gus offers a transient queue element: it must go with his session (Q3).
        _ = try await cluster.submit(.queueOffer(QueueOffer(roomId: room, key: "mic", value: "gus", transient: true)),
                                     room: room, as: ghost, via: 1)
        // "ghost-edge" never polls: the leader ends Gus's session once the 6 s lease has run out. A leader
        // elected moments ago first gives every edge the takeover time (7.5 s, the lease rule in docs/cluster.md),
        // so that is up to about 14.5 s after the election, plus a check interval and the proposal.
        try await cluster.eventually("gus to go offline", seconds: 25) {
            guard let out = try? await cluster.submit(.fetchMembersByIds(RoomUsers(roomId: room, userIds: ["gus", "liv"])),
                                                      room: room, as: live, via: 2),
                  case .success(.members(let members)) = out.result else { return false }
            // A visitor who is no longer online is no member at all (M2).
            return members.first { $0.userId == "gus" }.map { !$0.isOnline } ?? true
        }
        // Liv, whose edge keeps its lease, is still in; the transient element is gone.
        let members = try await cluster.submit(.fetchMembersByIds(RoomUsers(roomId: room, userIds: ["liv"])),
                                               room: room, as: live, via: 3)
        guard case .success(.members(let m)) = members.result else { Issue.record("\(members.result)"); return }
        #expect(m.first?.isOnline == true)
        let queue = try await cluster.submit(.queueList(roomId: room), room: room, as: live, via: 3)
        #expect(queue.result == .success(.queue([])))
        }
    }
}
