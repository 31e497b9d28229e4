import Foundation
import Testing
import ParleyCluster
import ParleyRooms

/// Issue 17, scale-out on real `parley node` processes: a 3-node cluster under load is joined by a 4th and a
/// 5th node (`--join` through node 1). The planner puts each shard on its rendezvous top 3 over the nodes,
/// the shards' leaders move the replicas (learner, snapshot, joint change), the balancer spreads leaders,
/// and the messages sent all along are each stored exactly once.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ScaleOutIntegrationTests {
    /// Which running nodes hold each shard, and each one's leader, from their `/status`.
    private func holders(_ cluster: LocalCluster) async -> (holders: [Int: Set<UInt64>], leaders: [Int: Set<UInt64>]) {
        let all = await cluster.statuses()
        var holders: [Int: Set<UInt64>] = [:]
        var leaders: [Int: Set<UInt64>] = [:]
        for (node, report) in all {
            for s in report.shards {
                holders[s.shard, default: []].insert(node)
                if s.role == "leader" { leaders[s.shard, default: []].insert(node) }
            }
        }
        return (holders, leaders)
    }

    private func placed(_ cluster: LocalCluster, on nodes: [UInt64]) async -> Bool {
        let table = ReplicaMoves.table(shardMap: ShardMap(shardCount: cluster.shards), nodes: nodes)
        let (holders, leaders) = await holders(cluster)
        return (0..<cluster.shards).allSatisfy { holders[$0] == Set(table[$0]) && leaders[$0]?.count == 1 }
    }

    @Test func aFourthAndAFifthNodeJoinUnderLoadAndTakeTheirReplicas() async throws {
        try await withLocalCluster(size: 5, shards: 16, extraArguments: ["--leader-balance-ms", "1000"], founders: 3) { cluster in
        for id: UInt64 in [1, 2, 3] { try cluster.start(id) }
        try await cluster.eventually("the founders to place every shard", seconds: 45) { await placed(cluster, on: [1, 2, 3]) }
        let shardMap = ShardMap(shardCount: 16)
        let rooms = MessageLoad.rooms(16, prefix: "grow", shards: 16)
        try await MessageLoad.prepare(cluster, rooms: rooms)
        let load = MessageLoad()
        load.start(cluster, rooms: rooms)

        let three = ReplicaMoves.table(shardMap: shardMap, nodes: [1, 2, 3])
        try await Task.sleep(for: .seconds(1))
        try cluster.start(4)
        try await cluster.eventually("node 4 to take the replicas it wins", seconds: 90) { await placed(cluster, on: [1, 2, 3, 4]) }
        let four = ReplicaMoves.table(shardMap: shardMap, nodes: [1, 2, 3, 4])
        #expect(Set((await holders(cluster)).holders.filter { $0.value.contains(4) }.keys)
                == Set((0..<16).filter { three[$0] != four[$0] }), "node 4 holds exactly the shards whose top 3 it entered")
        try cluster.start(5)
        try await cluster.eventually("node 5 to take the replicas it wins", seconds: 90) { await placed(cluster, on: [1, 2, 3, 4, 5]) }
        try await cluster.eventually("leaders within one of 16 ÷ 5 per node", seconds: 30) {
            let leaders = await holders(cluster).leaders
            var led: [UInt64: Int] = [1: 0, 2: 0, 3: 0, 4: 0, 5: 0]
            for set in leaders.values where set.count == 1 { led[set.first!]! += 1 }
            return led.values.reduce(0, +) == 16 && led.values.allSatisfy { (3...4).contains($0) }
        }
        let result = await load.stop()
        try await result.expectEachStoredOnce(cluster, rooms: rooms, via: 5)
        // Every replica of every shard agrees.
        try await cluster.eventually("replicas to agree", seconds: 20) {
            let all = await cluster.statuses(digests: true)
            return (0..<16).allSatisfy { shard in
                let views = all.values.compactMap { $0.shards.first { $0.shard == shard } }
                return views.count == 3 && Set(views.map(\.digest)).count == 1
            }
        }
        print("scale-out: \(result.sent) messages through two joins, \(result.retries) retried sends")
        }
    }

    @Test func aNodeWithTheIdOfAMemberIsRefused() async throws {
        try await withLocalCluster(size: 4, shards: 8, founders: 3) { cluster in
        for id: UInt64 in [1, 2, 3] { try cluster.start(id) }
        try await cluster.eventually("the founders to place every shard", seconds: 45) { await placed(cluster, on: [1, 2, 3]) }
        // Node "4" starts with id 2: same id as a member, its own addresses.
        var args = cluster.nodes.arguments(for: 4)
        args[args.firstIndex(of: "--id")! + 1] = "2"
        let result = try runToExit(cluster.nodes.executable, args, seconds: 40)
        #expect(result.status != 0)
        #expect(result.output.contains("node id 2 is already a member"), "\(result.output.suffix(600))")
        let meta = try await cluster.metaState(via: 1)
        #expect(meta.nodes.keys.sorted() == [1, 2, 3])
        #expect(meta.nodes[2]?.peerAddress == "127.0.0.1:\(cluster.nodes.layout.peerPort(2))")
        }
    }

    @Test func aNodeWithAWrongSecretCannotJoin() async throws {
        try await withLocalCluster(size: 4, shards: 8, founders: 3) { cluster in
        for id: UInt64 in [1, 2, 3] { try cluster.start(id) }
        try await cluster.eventually("the founders to place every shard", seconds: 45) { await placed(cluster, on: [1, 2, 3]) }
        let wrong = cluster.directory.appendingPathComponent("wrong-secret").path
        FileManager.default.createFile(atPath: wrong, contents: Data("not-the-cluster-secret".utf8),
                                       attributes: [.posixPermissions: 0o600])
        var args = cluster.nodes.arguments(for: 4)
        args[args.firstIndex(of: "--secret-file")! + 1] = wrong
        let result = try runToExit(cluster.nodes.executable, args, seconds: 60)
        #expect(result.status != 0)
        #expect(result.output.contains("cannot join the cluster") && result.output.contains("badToken"),
                "\(result.output.suffix(600))")
        let meta = try await cluster.metaState(via: 1)
        #expect(meta.nodes.keys.sorted() == [1, 2, 3])
        }
    }

    /// Runs `parley` to its exit (killed after `seconds`), with its output.
    private func runToExit(_ executable: URL, _ arguments: [String], seconds: Double) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = executable
        p.arguments = arguments
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let deadline = Date().addingTimeInterval(seconds)
        while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
