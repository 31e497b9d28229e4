import Foundation
import Testing
import ParleyCluster
import ParleyRooms
import ParleyTransport
import ParleyWire
import ParleyPlacement

/// Issue 35, a node's Raft groups on several event loops (docs/cores.md): shard `s` on loop `s % K`, the
/// meta group on the first. On real node processes: every shard of either loop elects, applies and feeds,
/// peers' calls reach the loop of the shard they name, and a call naming no shard it could hold is refused.
@Suite(.serialized, .timeLimit(.minutes(5))) struct RaftLoopsIntegrationTests {
    @Test func everyShardOfEveryLoopServesCommandsFeedsAndCalls() async throws {
        try await withLocalCluster(raftLoops: [2]) { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            for id in cluster.ids {
                let status = try await cluster.status(id)
                #expect(status.raftLoops == 2, "node \(id)")
                // The shards of both loops, once each, in order.
                #expect(status.shards.map(\.shard) == Array(0..<cluster.shards), "node \(id)")
            }
            // A room on a shard of each loop: created through one node, entered and written to through the
            // others, read back from each replica's feed.
            let shardMap = ShardMap(shardCount: cluster.shards)
            var rooms: [Int: String] = [:]
            var n = 0
            while rooms.count < 2 {
                let room = "loops-\(n)"
                n += 1
                rooms[shardMap.shard(ofRoom: room) % 2] = rooms[shardMap.shard(ofRoom: room) % 2] ?? room
            }
            let ann = CommandActor.session(SessionIdentity(userId: "ann", sessionId: "ann#1", edgeId: "it-edge"))
            for (_, room) in rooms.sorted(by: { $0.key < $1.key }) {
                let shard = shardMap.shard(ofRoom: room)
                // Each replica's feed from now on (a poll with no cursor answers where the feed stands).
                var cursors: [UInt64: UInt64] = [:]
                for id in cluster.ids {
                    cursors[id] = try await cluster.events(shard: shard, after: nil, edgeId: "it-edge", via: id).cursor
                }
                _ = try await cluster.submitRetrying(.createRoom(CreateRoom(roomId: room, creator: "ann", name: "Loops")),
                                                     room: room, via: 1)
                _ = try await cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room, as: ann, via: 2)
                let sent = try await cluster.submit(.sendMessage(SendMessage(roomId: room, body: "on loop \(shard % 2)")),
                                                    room: room, as: ann, via: 3)
                #expect(sent.errorCode == nil, "shard \(shard): \(sent.result)")
                var fed = Set<UInt64>()
                try await cluster.eventually("every replica of shard \(shard) to feed the message") {
                    for id in cluster.ids where !fed.contains(id) {
                        guard let page = try? await cluster.events(shard: shard, after: cursors[id], edgeId: "it-edge",
                                                                   via: id) else { continue }
                        cursors[id] = page.cursor
                        if page.batches.flatMap(\.events).contains(where: {
                            if case .message(let m) = $0.kind { m.body == "on loop \(shard % 2)" } else { false }
                        }) { fed.insert(id) }
                    }
                    return fed.count == cluster.ids.count
                }
                // `/rpc/v1/leader` names the shard: each node answers from the loop that holds it.
                let leader = try #require(await cluster.leader(ofShard: shard))
                for id in cluster.ids {
                    var w = ByteWriter()
                    w.write(shard)
                    let answer = try await cluster.call("/rpc/v1/leader", body: w.bytes, via: id)
                    var r = ByteReader(answer.body)
                    #expect(answer.status == 200 && (try? r.readUInt64()) == leader, "node \(id), shard \(shard)")
                }
            }
            // Replicas agree, shard by shard, over both loops.
            try await cluster.eventually("replicas to agree") {
                let all = await cluster.statuses(digests: true)
                guard all.count == 3 else { return false }
                return (0..<cluster.shards).allSatisfy { shard in
                    Set(all.values.compactMap { $0.shards.first { $0.shard == shard }?.digest }).count == 1
                }
            }
            // A call naming a shard out of range, a negative one, or none at all goes to the first loop, whose
            // driver refuses it: 400, and the node goes on serving.
            for body in [ShardRequest.room(shard: 999, actor: .appServer, command: .fetchRoomInfo(roomId: "x")).encoded(),
                         ShardRequest.room(shard: -3, actor: .appServer, command: .fetchRoomInfo(roomId: "x")).encoded(), []] {
                let refused = try await cluster.call("/rpc/v1/propose", body: body, via: 2)
                #expect(refused.status == 400)
            }
            let after = try await cluster.submit(.sendMessage(SendMessage(roomId: rooms[0]!, body: "still")),
                                                 room: rooms[0]!, as: ann, via: 2)
            #expect(after.errorCode == nil)
        }
    }
}
