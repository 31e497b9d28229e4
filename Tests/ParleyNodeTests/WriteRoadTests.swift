import Foundation
import ParleyNode
import FoundationNetworking
import Testing
import ParleyCluster
import ParleyHost
import ParleyRaft
import ParleyStorage
import ParleyWire
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

    @Test("issue 34, one encoding: a write through a follower enters the leader's log as its call carried it")
    func aCallsRequestEntersTheLeadersLogAsItCame() async throws {
        try await withLocalCluster { cluster in
            let room = "one-encoding"
            let shard = ShardMap(shardCount: 16).shard(ofRoom: room)
            let (leader, follower) = try await Self.started(cluster, shard: shard)
            _ = try await cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "ann", name: "Encoding")),
                                         room: room, via: leader)
            // The leaders write the request's own form once their drivers heard that every node reads it (asked
            // each second): a few seconds of writes, the last of which must be in that form.
            var bodies: [[UInt8]] = []
            for i in 1...12 {
                let command = RoomCommand.updateRoom(UpdateRoom(roomId: room, announcement: "as it came \(i)"))
                let outcome = try await cluster.submit(command, room: room, via: follower)
                guard case .success = outcome.result else { Issue.record("write \(i): \(outcome.result)"); return }
                // The call the follower's node makes to the leader carries what `/rpc/v1/submit` carried.
                bodies.append(ShardRequest.room(shard: shard, actor: .appServer, command: command).encoded())
                try await Task.sleep(for: .milliseconds(500))
            }
            #expect(cluster.stop(leader) != nil)
            let database = try NodeDatabase(path: cluster.directory.appendingPathComponent("node-\(leader)/node.sqlite").path)
            let log = try database.openGroup(ShardMap(shardCount: 16).group(of: shard))
            let entries = try log.entries(from: try log.firstIndex(), to: try log.lastIndex() + 1, maxBytes: 64 << 20)
            func holds(_ body: [UInt8]) -> Bool {
                entries.contains { entry in
                    entry.data.count >= body.count && (0...(entry.data.count - body.count)).contains { at in
                        entry.data[at..<(at + body.count)].elementsEqual(body)
                    }
                }
            }
            // Form 4 holds the call's bytes as they are; form 3 lays the command out another way.
            #expect(holds(bodies.last!), "the last write's request is not in the leader's log as it came")
            // Every write applied once, whatever its form.
            let decoded = try entries.filter { $0.kind == .normal && !$0.data.isEmpty }
                .flatMap { try ProposalBatch<ShardCommand>.proposals(in: $0.data) }
            for i in 1...12 {
                let command = ShardCommand.room(.updateRoom(UpdateRoom(roomId: room, announcement: "as it came \(i)")))
                #expect(decoded.filter { $0.command == command }.count == 1, "write \(i)")
            }
        }
    }

    @Test("issue 34, one typed request: a meta command through another node reaches the meta leader by /rpc/v1/meta/request")
    func metaCommandsTakeTheMetaRequestCall() async throws {
        try await withLocalCluster { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            let metaLeader = try #require(try await cluster.status(cluster.ids[0]).meta?.leader)
            let other = try #require(cluster.ids.first { $0 != metaLeader })
            func served(_ path: String) async throws -> Double {
                let (body, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(metaLeader) + "/metrics")!)
                return PrometheusText(text: String(decoding: body, as: UTF8.self))
                    .value("parley_peer_calls_served_total", ["path": path]) ?? 0
            }
            var id = ByteWriter()
            id.write(other)
            // Drain and undrain a node through itself: each a meta command that node's driver sends to the meta
            // leader. Once every node reads the shards' form (each driver asks every second), it goes by the new
            // call, and the older one is not used for it.
            try await cluster.eventually("meta commands to take /rpc/v1/meta/request", seconds: 20) {
                guard let before = try? await (served(Self.metaRequestPath), served(Self.metaProposePath)) else { return false }
                for path in [RaftDriver.drainPath, RaftDriver.undrainPath] {
                    guard let answer = try? await cluster.call(path, body: id.bytes, via: other), answer.status == 200 else {
                        return false
                    }
                }
                guard let after = try? await (served(Self.metaRequestPath), served(Self.metaProposePath)) else { return false }
                return after.0 - before.0 >= 2 && after.1 == before.1
            }
            let record = try await cluster.metaState(via: metaLeader).nodes[other]
            #expect(record?.state == .active)
        }
    }

    @Test("a node without a meta replica reads the meta state past a paused meta replica: the call gives way on the silence alone")
    func metaReadsGiveWayFromAPausedReplica() async throws {
        try await withLocalCluster(size: 4) { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            // The meta group sits on the first 3 nodes of its rendezvous order; a node outside it fetches the meta
            // state from them in that order.
            let metaNodes = ShardMap(shardCount: 16).metaReplicas(nodes: cluster.ids)
            let outside = try #require(cluster.ids.first { !metaNodes.contains($0) })
            let first = metaNodes[0]
            var id = ByteWriter()
            id.write(outside)
            // Asking to undrain an active node reads the registry (`registryChange`) and changes nothing.
            #expect(try await cluster.call(RaftDriver.undrainPath, body: id.bytes, via: outside).status == 200)
            // A call only gives way on a link that is up: a link the heartbeat closed on a loaded machine fails its
            // calls at once instead, which is not what this test is about.
            try await cluster.eventually("node \(outside)'s link to \(first) up", seconds: 10) {
                (try? await cluster.status(outside))?.peers.first { $0.id == first }?.connected == true
            }
            let before = try await StraightToLeaderTests.gaveWay(cluster, outside, to: first)
            cluster.pause(first)
            defer { cluster.resume(first) }
            let (took, answer) = try await StraightToLeaderTests.timed {
                try await cluster.call(RaftDriver.undrainPath, body: id.bytes, via: outside)
            }
            print("the registry read past paused meta replica \(first) took \(took)")
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
            let after = try await StraightToLeaderTests.gaveWay(cluster, outside, to: first)
            // Without giving way the call waits for the heartbeat to close the link (4 s).
            #expect(took < .seconds(3), "the read past the paused node \(first) took \(took)")
            if after <= before {
                var others: [String] = []
                for node in metaNodes where node != first {
                    others.append("\(node): \(try await StraightToLeaderTests.gaveWay(cluster, outside, to: node))")
                }
                let link = (try? await cluster.status(outside))?.peers.first { $0.id == first }
                Issue.record("""
                    node \(outside)'s calls to the paused node \(first) that gave way: \(before) → \(after) (to the other \
                    meta nodes: \(others)); the read took \(took); the link to \(first) now: \(String(describing: link))
                    """)
            }
        }
    }

    static let metaRequestPath = "/rpc/v1/meta/request"
    static let metaProposePath = "/rpc/v1/meta/propose"

    @Test("IM: a follower's replica answers a write with the leader it knows, and a read itself — by either call")
    func imWritesAtAFollowerGoToTheLeader() async throws {
        try await withLocalCluster { cluster in
            let account = "road-user"
            let (shard, leader, follower) = try await Self.started(cluster, user: account)
            let write = ShardRequest(shard: shard, actor: .appServer, command: .im(account: account, .confirm([])))
            let read = ShardRequest(shard: shard, actor: .appServer, command: .im(account: account, .read(.relations)))
            // Issue 34: `/rpc/v1/propose` takes IM commands as room ones (peer protocol 16); the older nodes' call,
            // `/rpc/v1/im/propose` in its own form, is still served alike.
            for path in [Self.proposePath, Self.imProposePath] {
                // Asked of the follower's own replica (the call that proposes on the node it reaches): a write is
                // not proposed there — it answers with the leader, and the caller's route goes there.
                #expect(try await Self.imAnswer(cluster, write, path, via: follower) == .notLeader(leader), "\(path)")
                guard case .applied(.im(.success)) = try await Self.imAnswer(cluster, read, path, via: follower) else {
                    Issue.record("a read at the follower was not answered there (\(path))")
                    return
                }
                // The leader proposes the write itself.
                guard case .applied(.im(.success)) = try await Self.imAnswer(cluster, write, path, via: leader) else {
                    Issue.record("the leader did not apply the write (\(path))")
                    return
                }
            }
            // The webhook outbox's command is the shard leader's own: a peer's is refused, and nothing applies.
            let outbox = ShardRequest(shard: shard, actor: .appServer, command: .webhook(.subscribe(namespace: "x", kinds: [])))
            let refused = try await cluster.call(Self.proposePath, body: outbox.encoded(), via: leader)
            #expect(refused.status == 400)
        }
    }

    @Test("issue 34: once every node speaks peer protocol 16, an IM write through a follower reaches its leader by the room commands' call")
    func imWritesTakeTheOneCall() async throws {
        try await withLocalCluster { cluster in
            let account = "one-call-user"
            let (shard, leader, follower) = try await Self.started(cluster, user: account)
            let write = ShardRequest(shard: shard, actor: .appServer, command: .im(account: account, .confirm([])))
            // The follower's node routes it (`/rpc/v1/submit`: the road the server API takes there). Its drivers
            // learn within a second or two that every node reads IM commands on `/rpc/v1/propose`; from then on
            // ten writes reach the leader that way and none by the older call.
            @Sendable func tenWrites() async throws -> Bool {
                let before = try await Self.served(cluster, leader)
                for _ in 0..<10 {
                    let response = try await cluster.call("/rpc/v1/submit", body: write.encoded(), via: follower)
                    guard response.status == 200, case .applied(.im(.success)) = try ShardAnswer(decoding: response.body)
                    else { return false }
                }
                let after = try await Self.served(cluster, leader)
                return after.propose - before.propose >= 10 && after.im == before.im
            }
            try await cluster.eventually("IM writes to reach the leader by /rpc/v1/propose alone", seconds: 20) {
                (try? await tenWrites()) ?? false
            }
        }
    }

    @Test("issue 34: a node with no replica of a shard learns its leader from the first follower's refusal and sends the rest straight there")
    func aNodeWithNoReplicaLearnsTheLeaderFromARefusal() async throws {
        let api = ImClientEndToEndTests.api
        // No leader balancer: the leader must not move between the choice below and the sends.
        try await withLocalCluster(size: 5, extraArguments: ["--app", "dev:\(api.secret)", "--leader-balance-ms", "0"]) { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            try await cluster.waitForSignedAPI(api)
            let placement = try await cluster.metaState(via: 1).placement
            let map = ShardMap(shardCount: 16)
            // Two users of one shard whose first-ranked replica follows (the ranked route asks it first), and a
            // node that holds no replica of the shard. One shard for both, so no relayed copy calls anyone else.
            var byShard: [Int: [String]] = [:]
            var found: (sender: String, receiver: String, first: UInt64, leader: UInt64, edge: UInt64)?
            for n in 0..<400 where found == nil {
                let user = "nia\(n)"
                let shard = map.shard(ofUser: AppScope.scoped(user, in: api.appKey))
                byShard[shard, default: []].append(user)
                guard shard < placement.count, let users = byShard[shard], users.count >= 2,
                      let first = placement[shard].first, let leader = await cluster.leader(ofShard: shard), first != leader,
                      let edge = cluster.ids.first(where: { !placement[shard].contains($0) }) else { continue }
                found = (users[0], users[1], first, leader, edge)
            }
            let (sender, receiver, first, leader, edge) = try #require(found)
            for u in [sender, receiver] {
                #expect(try await api.post(cluster.http(1), "/v1/user/create", ["accid": u, "token": "\(u)-token"]).status == 200)
            }
            let before = (first: try await Self.served(cluster, first), leader: try await Self.served(cluster, leader))
            for i in 1...10 {
                let answer = try await api.post(cluster.http(edge), "/v1/msg/sendMsg",
                                                ["from": sender, "to": receiver, "body": "straight \(i)", "msgId": "nr-\(i)"])
                #expect(answer.status == 200 && answer.code == 200, "send \(i) through node \(edge): \(answer.json)")
            }
            let after = (first: try await Self.served(cluster, first), leader: try await Self.served(cluster, leader))
            let askedFirst = after.first.propose + after.first.im - before.first.propose - before.first.im
            let askedLeader = after.leader.propose + after.leader.im - before.leader.propose - before.leader.im
            // The follower is asked once, names the leader, and is not asked again; the leader takes all ten.
            #expect(askedFirst <= 1, "node \(edge) asked the follower \(first) \(askedFirst) times for 10 sends")
            #expect(askedLeader >= 10, "the leader \(leader) was asked \(askedLeader) times for 10 sends")
        }
    }

    /// The leader's `parley_peer_calls_served_total` for the two calls that carry IM commands.
    static func served(_ cluster: LocalCluster, _ id: UInt64) async throws -> (propose: Double, im: Double) {
        let (body, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(id) + "/metrics")!)
        let text = PrometheusText(text: String(decoding: body, as: UTF8.self))
        let name = "parley_peer_calls_served_total"
        return (text.value(name, ["path": proposePath]) ?? 0, text.value(name, ["path": imProposePath]) ?? 0)
    }

    static let proposePath = "/rpc/v1/propose"
    static let imProposePath = "/rpc/v1/im/propose"

    /// Starts the cluster; the user's IM shard, its leader and one of its followers.
    static func started(_ cluster: LocalCluster, user: String) async throws -> (shard: Int, leader: UInt64, follower: UInt64) {
        let shard = ShardMap(shardCount: 16).shard(ofUser: user)
        let (leader, follower) = try await started(cluster, shard: shard)
        return (shard, leader, follower)
    }

    /// Starts the cluster; the shard's leader and one of its followers.
    static func started(_ cluster: LocalCluster, shard: Int) async throws -> (leader: UInt64, follower: UInt64) {
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let leader = try #require(await cluster.leader(ofShard: shard))
        return (leader, try #require(cluster.ids.first { $0 != leader }))
    }

    static func imAnswer(_ cluster: LocalCluster, _ request: ShardRequest, _ path: String, via id: UInt64) async throws
        -> ShardAnswer {
        let body = path == imProposePath ? try #require(request.legacyImBody()) : request.encoded()
        let response = try await cluster.call(path, body: body, via: id)
        #expect(response.status == 200)
        return try ShardAnswer(decoding: response.body)
    }

    /// The node's `parley_raft_proposals_total` (writes staged and reads asked on its replicas).
    static func proposals(_ cluster: LocalCluster, _ id: UInt64) async throws -> Double {
        let (body, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(id) + "/metrics")!)
        return try #require(PrometheusText(text: String(decoding: body, as: UTF8.self)).value("parley_raft_proposals_total"))
    }
}
