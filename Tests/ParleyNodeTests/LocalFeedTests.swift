import Foundation
import ParleyNode
import FoundationNetworking
import Testing
import ParleyClient
import ParleyCluster
import ParleyRooms
import ParleyPlacement
import ParleyWire

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
        let (body, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(follower) + "/metrics")!)
        let metrics = PrometheusText(text: String(decoding: body, as: UTF8.self))
        let here = metrics.value("parley_edge_feed_polls_total", ["replica": "here"]) ?? 0
        let peer = metrics.value("parley_edge_feed_polls_total", ["replica": "peer"]) ?? 0
        #expect(here >= 1 && here > peer, "polls here \(here), at peers \(peer)")
        // Once a single poll was answered here, the shard is read in the batched poll of its Raft loop.
        let batched = metrics.value("parley_edge_feed_polls_total", ["replica": "batched"]) ?? 0
        #expect(batched >= 1, "batched polls \(batched)")
        // Quiet past every lease the leader grants: an election's takeover (7.5 s) and the lease (6 s). Had the
        // follower not carried gil's lease, the leader would have ended his session and told him `lost`.
        try await Task.sleep(for: .seconds(16))
        let late = try await hal.sendMessage(room, body: "still there?", clientMessageId: "hal-late").seq
        _ = try await gil.sendMessage(room, body: "yes", clientMessageId: "gil-1")
        try await ClientFaultTests.waitFor("gil to hear the late message") {
            await rg.messages(in: room).contains { $0.seq == late }
        }
        // The quiet was read by batched polls alone (each ended by its wait), and they renewed gil's lease.
        let (later, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(follower) + "/metrics")!)
        let batchedLater = PrometheusText(text: String(decoding: later, as: UTF8.self))
            .value("parley_edge_feed_polls_total", ["replica": "batched"]) ?? 0
        #expect(batchedLater >= batched + 3, "batched polls \(batched) before the quiet, \(batchedLater) after")
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

    /// Issue 35: a node's own edge reads several shards' events in one poll per Raft loop, and hands a shard
    /// back to a poll of its own when its replica here cannot feed it: every room's messages arrive complete
    /// and in order, through a shard leadership leaving the node and a pause of another shard's leader (SIGSTOP:
    /// its connections stay open and silent).
    @Test func severalShardsReadInOnePollKeepEveryRoomCompleteThroughALeadershipMoveAndAPause() async throws {
        try await withLocalCluster { cluster in
        let map = ShardMap(shardCount: 16)
        func shard(_ room: String) -> ShardID { map.shard(ofRoom: AppScope.scoped(room, in: ClientFaultTests.app)) }
        let candidates = (0..<200).map { "batched-\($0)" }
        try await ClientFaultTests.prepare(cluster, users: ["ivy", "jon"], room: "batched-setup")
        // Ivy's edge is node 1. Four rooms of four shards: the first led by node 2 (paused later), the second by
        // node 1 (its leadership moved later: node 1's replica then follows and must first carry ivy's lease, so
        // the batched poll hands the shard back to a poll of its own). Leaders are moved there when not there.
        var rooms: [String] = []
        for room in candidates where rooms.count < 4 && !rooms.contains(where: { shard($0) == shard(room) }) {
            rooms.append(room)
        }
        func lead(_ room: String, by node: UInt64) async throws {
            try await ClientFaultTests.waitFor("node \(node) to lead shard \(shard(room))") {
                guard let leader = await cluster.leader(ofShard: shard(room)) else { return false }
                if leader == node { return true }
                var transfer = ByteWriter()
                transfer.write(shard(room))
                transfer.write(node)
                _ = try? await cluster.call("/rpc/v1/transfer", body: transfer.bytes, via: leader)
                try? await Task.sleep(for: .milliseconds(300))
                return await cluster.leader(ofShard: shard(room)) == node
            }
        }
        let victim = (room: rooms[0], node: UInt64(2)), movedRoom = rooms[1], sender = UInt64(3)
        try await lead(victim.room, by: victim.node)
        try await lead(movedRoom, by: 1)
        for room in rooms {
            let scoped = AppScope.scoped(room, in: ClientFaultTests.app)
            _ = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: "ivy", name: room)), room: scoped, via: 1)
        }
        let ivy = ClientFaultTests.client(cluster, via: [1]), jon = ClientFaultTests.client(cluster, via: [sender])
        let recorder = FaultEventRecorder(ivy)
        for room in rooms {
            try await ClientFaultTests.enter(ivy, "ivy", room)
            try await ClientFaultTests.enter(jon, "jon", room)
        }
        // Every room at once, so pages of several shards meet in a poll.
        func sendRound(_ round: Int, count: Int) async throws -> [String: [Int64]] {
            try await withThrowingTaskGroup(of: (String, [Int64]).self) { group in
                for room in rooms {
                    group.addTask {
                        var seqs: [Int64] = []
                        for i in 1...count {
                            seqs.append(try await ClientFaultTests.sendAcked(jon, room, body: "\(round).\(i)", id: "jon-\(room)-\(round)-\(i)"))
                        }
                        return (room, seqs)
                    }
                }
                var out: [String: [Int64]] = [:]
                for try await (room, seqs) in group { out[room] = seqs }
                return out
            }
        }
        func heardInOrder(_ sent: [String: [Int64]]) async -> Bool {
            for (room, seqs) in sent {
                let heard = await recorder.messages(in: room).map(\.seq)
                guard Set(heard).isSuperset(of: seqs), heard == heard.sorted(), Set(heard).count == heard.count else { return false }
            }
            return true
        }
        let first = try await sendRound(1, count: 10)
        try await ClientFaultTests.waitFor("ivy to hear every room's first round") { await heardInOrder(first) }
        let (body, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(1) + "/metrics")!)
        let metrics = PrometheusText(text: String(decoding: body, as: UTF8.self))
        let batched = metrics.value("parley_edge_feed_polls_total", ["replica": "batched"]) ?? 0
        let events = metrics.value("parley_edge_fanout_events_total", [:]) ?? 0
        #expect(batched >= 1, "batched polls \(batched)")
        #expect(events >= 40, "events fanned out \(events)")
        // A parked batched poll is answered by the shard's next event, not by its wait (5 s) running out: five
        // messages, each sent once the one before was heard, take well under one wait each.
        let pingRoom = rooms.first { $0 != victim.room }!
        let pingStart = Date()
        for i in 1...5 {
            let seq = try await ClientFaultTests.sendAcked(jon, pingRoom, body: "ping \(i)", id: "jon-ping-\(i)")
            try await ClientFaultTests.waitFor("ivy to hear ping \(i)") { await recorder.messages(in: pingRoom).contains { $0.seq == seq } }
        }
        #expect(Date().timeIntervalSince(pingStart) < 10, "five pings took \(Date().timeIntervalSince(pingStart)) s")
        // Node 1 hands the moved room's shard to the sender's node: its replica here follows now.
        try await lead(movedRoom, by: sender)
        // The paused leader's shards elect another; ivy's feeds of them go on (alone or batched) from where
        // they were, and the other rooms never stop.
        cluster.pause(victim.node)
        do {
            let second = try await sendRound(2, count: 5)
            try await ClientFaultTests.waitFor("ivy to hear every room's second round") { await heardInOrder(second) }
        } catch {
            cluster.resume(victim.node)
            throw error
        }
        cluster.resume(victim.node)
        let third = try await sendRound(3, count: 5)
        try await ClientFaultTests.waitFor("ivy to hear every room's third round") { await heardInOrder(third) }
        for room in rooms {
            let heard = await recorder.messages(in: room).map(\.seq)
            let expected = room == pingRoom ? 25 : 20
            #expect(heard == heard.sorted() && Set(heard).count == heard.count && heard.count == expected, "\(room): \(heard)")
        }
        let lost = await recorder.events.contains { if case .status(_, .lost) = $0 { true } else { false } }
        #expect(!lost, "ivy was told a session was lost")
        await ivy.close(); await jon.close()
        }
    }
}
