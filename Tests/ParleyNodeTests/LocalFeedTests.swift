import Foundation
import FoundationNetworking
import Testing
import ParleyClient
import ParleyCluster
import ParleyRooms
import ParleyPlacement

/// Issue 35: an edge reads a shard's events from its own node's replica when that is a voter that knows the
/// leader (no feed call crosses a link), and that follower carries the edge's lease to the leader, which alone
/// ends sessions (docs/cluster.md, "The lease rule"). Real `parley node` processes, clients over WebSocket.
@Suite(.serialized, .timeLimit(.minutes(4))) struct LocalFeedTests {
    @Test func anEdgeFedByItsOwnFollowerHearsTheRoomAndKeepsItsSessionPastTheLease() async throws {
        try await withLocalCluster { cluster in
        let room = "local-feed"
        try await ClientFaultTests.prepare(cluster, users: ["gil", "hal"], room: room)
        let shard = ShardMap(shardCount: 16).shard(ofRoom: AppScope.scoped(room, in: ClientFaultTests.app))
        let leader = try #require(await cluster.leader(ofShard: shard))
        let follower = try #require(cluster.ids.first { $0 != leader })
        let gil = ClientFaultTests.client(cluster, via: [follower]), hal = ClientFaultTests.client(cluster, via: [leader])
        let (rg, rh) = (FaultEventRecorder(gil), FaultEventRecorder(hal))
        try await ClientFaultTests.enter(gil, "gil", room)
        try await ClientFaultTests.enter(hal, "hal", room)
        var sent: [Int64] = []
        for i in 1...5 { sent.append(try await hal.sendMessage(room, body: "hi \(i)", clientMessageId: "hal-\(i)").seq) }
        try await ClientFaultTests.waitFor("gil to hear hal's messages") {
            Set(await rg.messages(in: room).map(\.seq)).isSuperset(of: sent)
        }
        // Gil's edge polled its own node's replica. (A feed polls another node only while its replica knows
        // no leader: an election on a loaded machine may add a few.)
        let (body, _) = try await URLSession.shared.data(from: URL(string: cluster.http(follower) + "/metrics")!)
        let metrics = PrometheusText(text: String(decoding: body, as: UTF8.self))
        let here = metrics.value("parley_edge_feed_polls_total", ["replica": "here"]) ?? 0
        let peer = metrics.value("parley_edge_feed_polls_total", ["replica": "peer"]) ?? 0
        #expect(here >= 1 && here > peer, "polls here \(here), at peers \(peer)")
        // Quiet past every lease the leader grants: an election's takeover (7.5 s) and the lease (6 s). Had the
        // follower not carried gil's lease, the leader would have ended his session and told him `lost`.
        try await Task.sleep(for: .seconds(16))
        let late = try await hal.sendMessage(room, body: "still there?", clientMessageId: "hal-late").seq
        _ = try await gil.sendMessage(room, body: "yes", clientMessageId: "gil-1")
        try await ClientFaultTests.waitFor("gil to hear the late message") {
            await rg.messages(in: room).contains { $0.seq == late }
        }
        // A feed that starts long after the leader's election (no takeover time left): a room of another shard
        // the follower does not lead. Its start reaches the leader before the enter does, so the leader's next
        // sweep does not find a session of an edge it never heard from (it ended them within a second).
        let map = ShardMap(shardCount: 16)
        var second: String?
        for i in 0..<200 where second == nil {
            let candidate = "local-feed-\(i)", s = map.shard(ofRoom: AppScope.scoped(candidate, in: ClientFaultTests.app))
            if s != shard, let l = await cluster.leader(ofShard: s), l != follower { second = candidate }
        }
        let other = try #require(second)
        let scoped = AppScope.scoped(other, in: ClientFaultTests.app)
        _ = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: "gil", name: "Second")), room: scoped, via: 1)
        try await ClientFaultTests.enter(gil, "gil", other)
        try await Task.sleep(for: .seconds(3))  // past a sweep or two of the leader's
        for i in 1...3 { _ = try await gil.sendMessage(other, body: "second \(i)", clientMessageId: "gil-2-\(i)") }
        let events = await rg.events
        let lost = events.contains { if case .status(_, .lost) = $0 { true } else { false } }
        #expect(!lost, "gil was told his session was lost")
        #expect(await rg.states(of: room) == [.entering, .enterOK])
        #expect(await rg.states(of: other) == [.entering, .enterOK])
        let exits = await rh.events.compactMap { event -> String? in
            guard case .notification(_, let n) = event, n.type == .exit else { return nil }
            return n.source.userId
        }
        #expect(exits.isEmpty, "hal saw exits of \(exits)")
        await gil.close(); await hal.close()
        }
    }
}
