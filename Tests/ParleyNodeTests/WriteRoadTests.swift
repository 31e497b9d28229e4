import Foundation
import FoundationNetworking
import Testing
import ParleyCluster
import ParleyRooms
import ParleyPlacement
import ParleyShardState

/// Issue 34's one road (session 39): a write that enters at a follower's node is appended by its shard's leader
/// and answered from the leader's apply — the follower's replica never proposes it. (Passed on inside Raft, a
/// write without a budget was answered when the follower applied it, after it learned the commit: up to
/// `--commit-notice-ms` later on a quiet shard.) A read stays on the follower. Real `parley node` processes.
@Suite(.serialized, .timeLimit(.minutes(3))) struct WriteRoadTests {
    @Test("a write through a follower's node is proposed by the leader alone; a read there stays there")
    func aFollowersWritesGoToTheLeader() async throws {
        try await withLocalCluster(extraArguments: ["--commit-notice-ms", "1000"]) { cluster in
            let room = "one-road"
            let (leader, follower) = try await Self.started(cluster, shard: ShardMap(shardCount: 16).shard(ofRoom: room))
            _ = try await cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "ann", name: "Road")),
                                         room: room, via: leader)
            let writes = 20
            let before = (leader: try await Self.proposals(cluster, leader), follower: try await Self.proposals(cluster, follower))
            for i in 1...writes {
                let outcome = try await cluster.submit(.updateRoom(UpdateRoom(roomId: room, announcement: "road \(i)")),
                                                       room: room, via: follower)
                guard case .success = outcome.result else {
                    Issue.record("write \(i) through node \(follower): \(outcome.result)")
                    return
                }
            }
            let after = (leader: try await Self.proposals(cluster, leader), follower: try await Self.proposals(cluster, follower))
            // Every write was proposed on the leader's node; on the follower's at most a few proposals of the
            // shards it leads itself (the cluster's own upkeep) — not one per write, as when it passed them on.
            #expect(after.leader - before.leader >= Double(writes), "leader \(leader): \(before.leader) → \(after.leader)")
            #expect(after.follower - before.follower < Double(writes / 2),
                    "follower \(follower) proposed the writes itself: \(before.follower) → \(after.follower)")
            // The last write is what a read through the follower sees (linearizable: a read index), and the
            // read is asked of the follower's own replica.
            let read = try await cluster.submit(.fetchRoomInfo(roomId: room), room: room, via: follower)
            guard case .success(.roomInfo(let info)) = read.result else {
                Issue.record("read through node \(follower): \(read.result)")
                return
            }
            #expect(info.info.announcement == "road \(writes)")
            let afterRead = try await Self.proposals(cluster, follower)
            #expect(afterRead > after.follower, "the read was answered by the follower's replica")
        }
    }

    @Test("IM: a follower's replica answers a write with the leader it knows, and a read itself")
    func imWritesAtAFollowerGoToTheLeader() async throws {
        try await withLocalCluster { cluster in
            let account = "road-user"
            let shard = ShardMap(shardCount: 16).shard(ofUser: account)
            let (leader, follower) = try await Self.started(cluster, shard: shard)
            // Asked of the follower's own replica (the call that proposes on the node it reaches): a write is not
            // proposed there — it answers with the leader, and the caller's route goes there.
            let write = ForwardedImCommand(shard: shard, actor: .appServer, account: account, command: .confirm([]))
            #expect(try await Self.imAnswer(cluster, write, via: follower) == .notLeader(leader))
            let read = ForwardedImCommand(shard: shard, actor: .appServer, account: account, command: .read(.relations))
            guard case .applied = try await Self.imAnswer(cluster, read, via: follower) else {
                Issue.record("a read at the follower was not answered there")
                return
            }
            // The leader proposes the write itself.
            guard case .applied = try await Self.imAnswer(cluster, write, via: leader) else {
                Issue.record("the leader did not apply the write")
                return
            }
        }
    }

    /// Starts the cluster; the shard's leader and one of its followers.
    static func started(_ cluster: LocalCluster, shard: Int) async throws -> (leader: UInt64, follower: UInt64) {
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let leader = try #require(await cluster.leader(ofShard: shard))
        return (leader, try #require(cluster.ids.first { $0 != leader }))
    }

    static func imAnswer(_ cluster: LocalCluster, _ command: ForwardedImCommand, via id: UInt64) async throws
        -> GroupAnswer<ShardOutcome> {
        let response = try await cluster.call("/rpc/v1/im/propose", body: command.encoded(), via: id)
        #expect(response.status == 200)
        return try GroupAnswer<ShardOutcome>(decoding: response.body)
    }

    /// The node's `parley_raft_proposals_total` (writes staged and reads asked on its replicas).
    static func proposals(_ cluster: LocalCluster, _ id: UInt64) async throws -> Double {
        let (body, _) = try await URLSession.shared.data(from: URL(string: cluster.http(id) + "/metrics")!)
        return try #require(PrometheusText(text: String(decoding: body, as: UTF8.self)).value("parley_raft_proposals_total"))
    }
}
