import Foundation
import ParleyNode
import ParleyTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ParleyAPI
import ParleyCluster
import ParleyRooms
@testable import ParleyTransport
import ParleyPlacement

private func session(_ user: String) -> CommandActor {
    .session(SessionIdentity(userId: user, sessionId: "\(user)#1", edgeId: "it-edge"))
}

/// Starts the cluster, makes `room` and enters ann (through node 2); the room's shard.
private func startWithAnn(in room: String, _ cluster: LocalCluster) async throws -> Int {
    try cluster.startAll()
    try await cluster.waitForLeaders()
    _ = try await cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "ann", name: room.capitalized)), room: room, via: 1)
    _ = try await cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room, as: session("ann"), via: 2)
    return ShardMap(shardCount: 16).shard(ofRoom: room)
}

private func messageBodies(_ outcome: ApplyOutcome) -> [String] {
    guard case .success(.history(let items)) = outcome.result else { return [] }
    return items.compactMap { if case .message(let m) = $0 { m.body } else { nil } }
}

/// Three real `parley node` processes on loopback, talking HTTP/2 to each other, with SQLite on disk.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ClusterIntegrationTests {
    @Test func threeNodesElectLeadersAndAgreeOnStatus() async throws {
        try await withLocalCluster { cluster in
        try cluster.startAll()
        try await cluster.eventually("every shard to have one agreed leader") { await cluster.agreeOnLeaders() }
        let all = await cluster.statuses()
        for report in all.values {
            #expect(report.shards.map(\.shard) == Array(0..<16))  // 3 nodes, 3 replicas: every node holds every shard
            #expect(report.peers.count == 2 && report.healthy)
        }
        // Every node registered itself in the meta group and one of them installed the placement table.
        try await cluster.eventually("the meta group to know all nodes and placement v1") {
            let all = await cluster.statuses()
            return all.count == 3 && all.values.allSatisfy { r in
                r.meta?.placementVersion == 1 && r.meta?.nodes.map(\.id) == [1, 2, 3]
                    && r.meta?.nodes.allSatisfy { $0.state == "active" } == true
            }
        }
        let meta = try #require(await cluster.statuses()[1]?.meta)
        #expect(meta.nodes.map(\.httpAddress) == cluster.ids.map { cluster.http($0).replacingOccurrences(of: "http://", with: "") })
        }
    }

    @Test func everyNodeAnswersWhereARoomLivesAndWhoLeadsIt() async throws {
        try await withLocalCluster { cluster in
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let shard = ShardMap(shardCount: 16).shard(ofRoom: "lobby")
        let leader = try #require(await cluster.leader(ofShard: shard))
        for id in cluster.ids {
            let (data, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(id) + "/placement/rooms/lobby")!)
            let p = try JSONDecoder().decode(ShardPlacementReport.self, from: data)
            #expect(p == ShardPlacementReport(roomId: "lobby", shard: shard,
                                              replicas: ShardMap(shardCount: 16).replicas(of: shard, nodes: [1, 2, 3]),
                                              leader: leader))
        }
        let missing = try await ToolHTTP.shared.data(from: URL(string: cluster.http(1) + "/placement/shards/16")!)
        #expect((missing.1 as? HTTPURLResponse)?.statusCode == 404)
        let tooLong = String(repeating: "r", count: 300)
        let bad = try await ToolHTTP.shared.data(from: URL(string: cluster.http(1) + "/placement/rooms/\(tooLong)")!)
        #expect((bad.1 as? HTTPURLResponse)?.statusCode == 400)
        }
    }

    @Test func aCommandSentToAnyNodeIsAppliedOnAllThreeReplicas() async throws {
        try await withLocalCluster { cluster in
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let shard = ShardMap(shardCount: 16).shard(ofRoom: "lobby")
        let leader = try #require(await cluster.leader(ofShard: shard))
        let follower = cluster.ids.first { $0 != leader }!
        // Sent to a follower, routed to the leader.
        let created = try await cluster.submit(.createRoom(CreateRoom(roomId: "lobby", creator: "ann", name: "Lobby")),
                                               room: "lobby", via: follower)
        #expect(created.result == .success(.done))
        try await cluster.eventually("all replicas to hold the room with the same state") {
            let all = await cluster.statuses(digests: true)
            let views = all.values.compactMap { $0.shards.first { $0.shard == shard } }
            return views.count == 3 && views.allSatisfy { $0.rooms == 1 } && Set(views.map(\.digest)).count == 1
        }
        }
    }

    /// Issue 4, TLS optional: the same with `--peer-tls-*` on every node (one self-signed certificate that is
    /// also the trust root), so Raft traffic, forwarding and the edge feeds all run over mutual TLS.
    @Test func nodesWithPeerTLSElectLeadersAndReplicate() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parley-it-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let cert = folder.appendingPathComponent("cluster.pem").path, key = folder.appendingPathComponent("cluster.key").path
        let made = try await runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=parley-it"])
        try #require(made.status == 0, "\(made.output)")
        let tls = PeerTLS(certificatePath: cert, privateKeyPath: key, trustRootsPath: cert)
        try await withLocalCluster(extraArguments: ["--peer-tls-cert", cert, "--peer-tls-key", key, "--peer-tls-ca", cert],
                                    clientTLS: tls) { cluster in
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let shard = ShardMap(shardCount: 16).shard(ofRoom: "vault")
        let leader = try #require(await cluster.leader(ofShard: shard))
        let follower = cluster.ids.first { $0 != leader }!
        let created = try await cluster.submit(.createRoom(CreateRoom(roomId: "vault", creator: "ann", name: "Vault")),
                                               room: "vault", via: follower)
        #expect(created.result == .success(.done))
        try await cluster.eventually("all replicas to hold the room") {
            let views = await cluster.statuses(digests: true).values.compactMap { $0.shards.first { $0.shard == shard } }
            return views.count == 3 && views.allSatisfy { $0.rooms == 1 } && Set(views.map(\.digest)).count == 1
        }
        }
    }

    /// Issue 34: reads leave the log. Each write through one node is read back at once through another (the
    /// leader's, a follower's): every read sees every write acknowledged before it (the read index), and the
    /// 30 reads add no entry to the shard's log — its commit index grows by the writes' entries alone.
    @Test func readsSeeEveryAcknowledgedWriteAndAddNoEntry() async throws {
        try await withLocalCluster { cluster in
        let room = "library"
        let shard = try await startWithAnn(in: room, cluster)
        let leader = try #require(await cluster.leader(ofShard: shard))
        func commit() async throws -> UInt64 {
            try #require(try await cluster.status(leader).shards.first { $0.shard == shard }).commit
        }
        // Nothing but the test's writes may enter the shard while it counts: the leaders have set the windows'
        // bounds a young cluster sets on every shard once every node reads them (SPEC D1: one command per shard
        // each, a second or two after the start: the likely 11th entry a loaded full run counted, session 48).
        try await cluster.eventually("the leaders to set every shard's window bounds") {
            guard let status = try? await cluster.status(leader), let memory = status.memory else { return false }
            return memory.shardsWithWindowBound == status.shards.count && memory.shardsWithImLogWindowBound == status.shards.count
        }
        let before = try await commit()
        var written: [String] = []
        for i in 0..<10 {
            let via = UInt64(1 + i % 3), readVia = UInt64(1 + (i + 1) % 3)
            let sent = try await cluster.submit(.sendMessage(SendMessage(roomId: room, body: "w-\(i)")), room: room,
                                                as: session("ann"), via: via)
            guard case .success(.messageSent) = sent.result else { Issue.record("send \(i): \(sent)"); continue }
            written.append("w-\(i)")
            let read = try await cluster.submit(.fetchHistory(HistoryQuery(roomId: room, limit: 100, ascending: true)), room: room,
                                                as: session("ann"), via: readVia)
            #expect(messageBodies(read) == written, "read \(i) through node \(readVia) after the write through \(via)")
            let info = try await cluster.submit(.fetchRoomInfo(roomId: room), room: room, as: .appServer, via: readVia)
            guard case .success(.roomInfo) = info.result else { Issue.record("room info \(i): \(info)"); continue }
            let members = try await cluster.submit(.fetchMembers(FetchMembers(roomId: room, kind: .temp, limit: 10)), room: room,
                                                   as: session("ann"), via: via)
            #expect(members.errorCode == nil, "\(members)")
        }
        let after = try await commit()
        #expect(after - before <= 10, "the shard's log grew by \(after - before) entries for 10 writes and 30 reads")
        }
    }

    @Test func killingAShardLeaderElectsANewOneWithinTwoSecondsAndLosesNothing() async throws {
        try await withLocalCluster { cluster in
        let room = "hall"
        let shard = try await startWithAnn(in: room, cluster)
        var acknowledged: [String] = []
        for i in 0..<20 {
            let out = try await cluster.submit(.sendMessage(SendMessage(roomId: room, body: "before-\(i)")), room: room,
                                               as: session("ann"), via: UInt64(1 + i % 3))
            if case .success(.messageSent) = out.result { acknowledged.append("before-\(i)") }
        }
        let old = try #require(await cluster.leader(ofShard: shard))
        cluster.kill9(old)
        let killedAt = Date()
        // When the leader appeared is known to within one poll: the poll that saw it started after it did
        // or ran while it did. A poll of /status on a machine running the whole suite can itself take most
        // of a second, which is the test's time, not the election's.
        var lastPollStart = killedAt
        try await cluster.eventually("a new leader", seconds: 10) {
            lastPollStart = Date()
            guard let l = await cluster.leader(ofShard: shard) else { return false }
            return l != old
        }
        let seen = Date().timeIntervalSince(killedAt)
        let elected = lastPollStart.timeIntervalSince(killedAt)
        #expect(elected < 2.0, "new leader after about \(elected) s (seen at \(seen) s)")
        let survivor = cluster.ids.first { $0 != old }!
        for i in 0..<20 {
            let out = try await cluster.submit(.sendMessage(SendMessage(roomId: room, body: "after-\(i)")), room: room,
                                               as: session("ann"), via: survivor)
            if case .success(.messageSent) = out.result { acknowledged.append("after-\(i)") }
        }
        #expect(acknowledged.count == 40)

        // The killed node comes back and catches up to the same state.
        try cluster.start(old)
        try await cluster.eventually("the restarted node to catch up") {
            let all = await cluster.statuses(digests: true)
            let views = all.values.compactMap { $0.shards.first { $0.shard == shard } }
            return views.count == 3 && Set(views.map(\.digest)).count == 1 && Set(views.map(\.applied)).count == 1
        }
        let history = try await cluster.submit(.fetchHistory(HistoryQuery(roomId: room, limit: 100)), room: room,
                                               as: session("ann"), via: old)
        #expect(Set(messageBodies(history)) == Set(acknowledged))
        }
    }

    @Test func aFullClusterRestartKeepsEveryRoom() async throws {
        try await withLocalCluster { cluster in
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let rooms = (0..<12).map { "room-\($0)" }
        for (i, room) in rooms.enumerated() {
            let out = try await cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "u\(i)", name: room)),
                                               room: room, via: UInt64(1 + i % 3))
            #expect(out.result == .success(.done))
        }
        for id in cluster.ids { cluster.stop(id) }
        try cluster.startAll()
        try await cluster.eventually("leaders after the restart") { await cluster.agreeOnLeaders() }
        for room in rooms {
            let info = try await cluster.submit(.fetchRoomInfo(roomId: room), room: room, via: 3)
            guard case .success(.roomInfo(let view)) = info.result else {
                Issue.record("\(room) lost: \(info.result)")
                continue
            }
            #expect(view.info.roomId == room)
        }
        }
    }

    /// SPEC A3 (issue 24): a credential captured from node 2's stream to node 3 opens nothing else. It is
    /// accepted by node 3 once (as the real stream was); sent again to node 3, to node 1 for the meta state
    /// (which holds app secrets), or made 31 s ago, it is refused with 401, logged and counted.
    @Test func aCapturedPeerCredentialOpensNothingElse() async throws {
        let nghttp = ["/usr/bin/nghttp", "/usr/local/bin/nghttp"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let tool = try #require(nghttp, "install nghttp2-client (.ci/run does) to run this test")
        try await withLocalCluster { cluster in
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let auth = PeerAuth(secret: cluster.nodes.layout.secret)
        func call(_ node: UInt64, _ credential: [(String, String)], path: String = "/rpc/v1/meta/state") async throws -> String {
            let headers = credential.flatMap { ["-H", "\($0.0): \($0.1)"] }
            return try await runTool(tool, ["-v"] + headers + ["http://127.0.0.1:\(cluster.nodes.layout.peerPort(node))\(path)"]).output
        }
        let captured = auth.headers(from: 2, to: 3, path: "/rpc/v1/meta/state")
        #expect(try await call(3, captured).contains(":status: 200"), "the credential as first used")
        let again = try await call(3, captured)
        #expect(again.contains(":status: 401") && again.contains("replayed"), "\(again.suffix(300))")
        let elsewhere = try await call(1, captured)
        #expect(elsewhere.contains(":status: 401") && elsewhere.contains("badToken"), "\(elsewhere.suffix(300))")
        let old = auth.headers(from: 2, to: 1, path: "/rpc/v1/meta/state", now: Int64(Date().timeIntervalSince1970) - 31)
        let late = try await call(1, old)
        #expect(late.contains(":status: 401") && late.contains("stale"), "\(late.suffix(300))")
        let log = try String(contentsOf: cluster.directory.appendingPathComponent("node-1.log"), encoding: .utf8)
        #expect(log.contains("refused peer credentials"))
        let (metrics, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(1) + "/metrics")!)
        let text = PrometheusText(text: String(decoding: metrics, as: UTF8.self))
        #expect(text.value("parley_peer_auth_failures_total", ["reason": "stale"]) == 1)
        #expect(text.value("parley_peer_auth_failures_total", ["reason": "badToken"]) == 1)
        // The cluster itself was not disturbed: its links authenticate afresh on every connection.
        #expect(await cluster.statuses().values.allSatisfy { $0.peers.allSatisfy(\.connected) })
        }
    }

    /// Issue 24 and SPEC A5: the data folder holds app secrets and user tokens: the node's user's alone (0700 / 0600),
    /// the SQLite WAL and shared-memory files included, and a folder left world-readable by an older version
    /// is repaired when the node starts.
    @Test func theDataFolderIsReadableByTheNodesUserAlone() async throws {
        try await withLocalCluster { cluster in
        // Node 3's folder as an older version left it: world-readable, with a world-readable file in it.
        let old = cluster.nodes.layout.dataDirectory + "/node-3"
        try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        FileManager.default.createFile(atPath: old + "/left-behind", contents: Data("x".utf8),
                                       attributes: [.posixPermissions: 0o644])
        try cluster.startAll()
        try await cluster.waitForLeaders()
        _ = try await cluster.submit(.createRoom(CreateRoom(roomId: "private", creator: "ann", name: "P")), room: "private", via: 1)
        for id in cluster.ids {
            let folder = cluster.nodes.layout.dataDirectory + "/node-\(id)"
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(names.contains("node.sqlite") && names.contains("node.sqlite-wal"), "\(names)")
            for path in [folder] + names.map({ folder + "/" + $0 }) {
                let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
                #expect(mode & 0o077 == 0, "\(path) is mode \(String(mode, radix: 8))")
            }
        }
        // SPEC A5: the cluster secret is in no process's command line (it comes from a 0600 file), no log
        // line and no /status.
        let secret = cluster.nodes.layout.secret
        for id in cluster.ids {
            let pid = try #require(cluster.nodes.pid(id))
            let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
            #expect(!cmdline.isEmpty && cmdline.range(of: Data(secret.utf8)) == nil, "node \(id)'s command line holds the secret")
            let status = try await ToolHTTP.shared.data(from: URL(string: cluster.http(id) + "/status")!).0
            #expect(status.range(of: Data(secret.utf8)) == nil)
        }
        let secretFile = try FileManager.default.attributesOfItem(atPath: cluster.nodes.secretFile)
        #expect((secretFile[.posixPermissions] as? Int).map { $0 & 0o077 == 0 } == true)
        for name in try FileManager.default.contentsOfDirectory(atPath: cluster.directory.path) where name.hasSuffix(".log") {
            let log = try Data(contentsOf: cluster.directory.appendingPathComponent(name))
            #expect(log.range(of: Data(secret.utf8)) == nil, "\(name) holds the secret")
        }
        }
    }
}
