import ArgumentParser
import Foundation
import NIOCore
import ParleyAPI
import ParleyNode
import ParleyCluster
import ParleyRaft
import ParleyRooms
#if canImport(FoundationNetworking)
import FoundationNetworking
import ParleyPlacement
#endif

/// `parley bench join` (issue 17): what a node joining a loaded cluster costs its clients, and what moving
/// one full shard costs. Two scenarios, each on its own cluster of real node processes:
/// - load: a 3-node cluster carries replicated messages (`ReplicateLoad`, through the peer port) in one-second
///   windows before, during and after a 4th node joins and takes its replicas; messages/s and p99 per phase.
/// - shard: one shard holds `--shard-rooms` rooms (each created, with a member entered) and the others are
///   empty; a 4th node joins and the time and snapshot bytes of that shard's move are measured.
struct BenchJoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join", abstract: "Throughput and latency while a 4th node joins a loaded 3-node cluster; the cost of moving a full shard.")

    @Option(help: "Shard count.") var shards = 64
    @Option(help: "Commands in flight during the load scenario.") var clients = 64
    @Option(help: "Rooms the load goes to.") var rooms = 64
    @Option(help: "One-second windows measured before the join, and again after the moves end.") var windows = 10
    @Option(help: "Rooms in the shard that moves (shard scenario; 0 skips it).") var shardRooms = 10_000
    @Option(help: "Snapshot bytes per second each node may send (--snapshot-bytes-per-second of the nodes).")
    var snapshotBytesPerSecond: Int?
    @Option(help: "Which scenarios: load, shard or both.") var scenario = "both"
    @Flag(help: "Skip fsync on the nodes (never for published figures).") var noFsync = false
    @Flag(help: "Print every window of the load scenario (ops/s and p99) as it ends.") var timeline = false

    private var nodeArguments: [String] {
        snapshotBytesPerSecond.map { ["--snapshot-bytes-per-second", "\($0)"] } ?? []
    }

    func run() async throws {
        guard ["load", "shard", "both"].contains(scenario) else { throw ValidationError("--scenario is load, shard or both") }
        print("parley bench join: \(shards) shards, fsync \(noFsync ? "OFF" : "on"), snapshot cap "
            + "\(snapshotBytesPerSecond.map { "\($0) B/s" } ?? "default (32 MiB/s)")")
        if scenario != "shard" { try await loadScenario() }
        if scenario != "load", shardRooms > 0 { try await shardScenario() }
    }

    // MARK: Load before, during and after a join

    /// Runs `body` on a fresh cluster of 3 founders and a 4th node to join, and stops it however `body` ends.
    private func withJoiningCluster(_ body: (BenchCluster) async throws -> Void) async throws {
        let cluster = try BenchCluster(nodes: 4, shards: shards, fsync: !noFsync, founders: 3, extraArguments: nodeArguments)
        do {
            try await cluster.start()
            let alive = cluster.keepEdgeAlive("bench", shards: shards)
            defer { alive.cancel() }
            try await body(cluster)
        } catch {
            await cluster.stop(after: error)
            throw error
        }
        await cluster.stop()
    }

    private func loadScenario() async throws {
        try await withJoiningCluster { cluster in
            let shardMap = ShardMap(shardCount: shards)
            let bench = ReplicateLoad(client: cluster.client, nodes: [1, 2, 3], shardMap: shardMap,
                                      rooms: (0..<rooms).map { "bench-room-\($0)" }, size: 64)
            try await bench.prepare()
            try await Self.settle(cluster, nodes: [1, 2, 3])
            print("load: \(clients) commands in flight to \(rooms) rooms through nodes 1-3; 1-second windows")
            print("phase    windows  ops/s (median)  ops/s (lowest)  p99 ms (median)  p99 ms (worst)  errors")
            var before: [ReplicateLoad.Result] = []
            for _ in 0..<windows { before.append(try await window(bench, cluster)) }
            let joinedAt = ContinuousClock.now
            try cluster.join(4)
            var during: [ReplicateLoad.Result] = []
            let table = ReplicaMoves.table(shardMap: shardMap, nodes: [1, 2, 3, 4])
            var settled = false
            while !settled {
                during.append(try await window(bench, cluster))
                settled = await Self.placed(cluster, table: table)
                guard ContinuousClock.now - joinedAt < .seconds(300) else { throw ValidationError("the moves did not end in 300 s") }
            }
            let moveTime = ContinuousClock.now - joinedAt
            var after: [ReplicateLoad.Result] = []
            for _ in 0..<windows { after.append(try await window(bench, cluster)) }
            for (name, phase) in [("before", before), ("during", during), ("after", after)] { Self.report(name, phase) }
            // Against the cluster before the join, and against the same 4 nodes once the moves ended: on a
            // machine with fewer cores than nodes the 4-node cluster is slower by itself, which the second
            // separates from what the moves cost.
            let duringOps = Self.median(during.map(\.opsPerSecond))
            print(String(format: "node 4 joined and every move ended within %.1f s (%d shards moved); throughput during the moves "
                + "%.1f %% below before the join, %.1f %% below after it", Self.seconds(moveTime),
                (0..<shards).filter { table[$0].contains(4) }.count,
                (1 - duringOps / Self.median(before.map(\.opsPerSecond))) * 100, (1 - duringOps / Self.median(after.map(\.opsPerSecond))) * 100))
        }
    }

    private func window(_ bench: ReplicateLoad, _ cluster: BenchCluster) async throws -> ReplicateLoad.Result {
        let r = try await bench.run(clients: clients, seconds: 1, on: cluster.group.next(), nodeCPUSeconds: { 0 })
        if timeline { print(String(format: "  window: %6.0f ops/s  p50 %6.2f ms  p99 %6.2f ms  errors %d", r.opsPerSecond, r.p50, r.p99, r.errors)) }
        return r
    }

    private static func report(_ name: String, _ results: [ReplicateLoad.Result]) {
        print(String(format: "%-7@  %7d  %14.0f  %14.0f  %15.2f  %14.2f  %6d", name as NSString, results.count,
                     median(results.map(\.opsPerSecond)), results.map(\.opsPerSecond).min() ?? 0,
                     median(results.map(\.p99)), results.map(\.p99).max() ?? 0, results.reduce(0) { $0 + $1.errors }))
    }

    private static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        return values.sorted()[values.count / 2]
    }

    private static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    // MARK: One full shard

    private func shardScenario() async throws {
        try await withJoiningCluster { cluster in
            let shardMap = ShardMap(shardCount: shards)
            let table = ReplicaMoves.table(shardMap: shardMap, nodes: [1, 2, 3, 4])
            let three = ReplicaMoves.table(shardMap: shardMap, nodes: [1, 2, 3])
            guard let shard = (0..<shards).first(where: { table[$0] != three[$0] }) else {
                throw ValidationError("no shard moves to node 4 with \(shards) shards")
            }
            var names: [String] = []
            var n = 0
            while names.count < shardRooms {
                let name = "moved-room-\(n)"
                n += 1
                if shardMap.shard(ofRoom: name) == shard { names.append(name) }
            }
            let filling = ContinuousClock.now
            let load = ReplicateLoad(client: cluster.client, nodes: [1, 2, 3], shardMap: shardMap, rooms: names, size: 64)
            try await load.prepare(window: 64)
            print(String(format: "shard: %d rooms (each created, one member entered) in shard %d in %.1f s; node 4 joins",
                         shardRooms, shard, Self.seconds(ContinuousClock.now - filling)))
            let sentBefore = await Self.snapshotBytesSent(cluster)
            let joinedAt = ContinuousClock.now
            try cluster.join(4)
            var learnerSeen: ContinuousClock.Instant?
            var snapshotBytes: UInt64 = 0
            while true {
                let statuses = await Self.statuses(cluster)
                let move = statuses.values.flatMap { $0.moves ?? [] }.first { $0.shard == shard }
                if let move, move.learners.contains(where: { $0.node == 4 }) {
                    learnerSeen = learnerSeen ?? .now
                    snapshotBytes = max(snapshotBytes, move.learners.map(\.snapshotBytes).max() ?? 0)
                }
                if move == nil, let leader = statuses.values.first(where: { s in s.shards.contains { $0.shard == shard && $0.role == "leader" } }),
                   let view = leader.shards.first(where: { $0.shard == shard }),
                   Set(view.voters ?? []) == Set(table[shard]), (view.learners ?? []).isEmpty, view.joint == false {
                    break
                }
                guard ContinuousClock.now - joinedAt < .seconds(300) else { throw ValidationError("shard \(shard) did not move in 300 s") }
                try await Task.sleep(for: .milliseconds(50))
            }
            let done = ContinuousClock.now
            let sent = await Self.snapshotBytesSent(cluster) - sentBefore
            let size = await Self.roomsOn(cluster, shard: shard, node: 4)
            print(String(format: "shard %d moved to node 4: %.2f s from the join, %.2f s from its learner showing in /status; "
                + "snapshot %@ (%.1f MiB); snapshot bytes sent by all nodes during the join %.1f MiB; node 4 holds %d rooms of it",
                shard, Self.seconds(done - joinedAt), learnerSeen.map { Self.seconds(done - $0) } ?? 0,
                snapshotBytes > 0 ? "\(snapshotBytes) B" as NSString : "not seen in flight" as NSString,
                Double(snapshotBytes) / 1_048_576, sent / 1_048_576, size))
        }
    }

    // MARK: Observation

    private static func statuses(_ cluster: BenchCluster) async -> [UInt64: NodeStatusReport] {
        var out: [UInt64: NodeStatusReport] = [:]
        for id in cluster.layout.ids {
            var request = URLRequest(url: URL(string: cluster.layout.httpURL(id) + "/status")!)
            request.timeoutInterval = 2
            guard let (data, _) = try? await ToolHTTP.shared.data(for: request),
                  let report = try? JSONDecoder().decode(NodeStatusReport.self, from: data) else { continue }
            out[id] = report
        }
        return out
    }

    /// Every shard held by exactly its table's nodes, with one leader whose voters are those and no move left.
    static func placed(_ cluster: BenchCluster, table: [[NodeID]]) async -> Bool {
        let all = await statuses(cluster)
        guard all.count == cluster.layout.count, all.values.allSatisfy({ ($0.moves ?? []).isEmpty }) else { return false }
        return table.indices.allSatisfy { shard in
            let holders = all.filter { $0.value.shards.contains { $0.shard == shard } }.keys
            return Set(holders) == Set(table[shard])
                && all.values.contains { $0.shards.contains { $0.shard == shard && $0.role == "leader" } }
        }
    }

    /// Waits until every shard has one leader and the balancer has spread them (within one per node), so
    /// the first windows do not measure the cluster's own start.
    private static func settle(_ cluster: BenchCluster, nodes: [UInt64]) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < deadline {
            let all = await statuses(cluster)
            let counts = nodes.map { id in all[id]?.shards.filter { $0.role == "leader" }.count ?? 0 }
            if counts.reduce(0, +) == cluster.layout.shards, let high = counts.max(), let low = counts.min(), high - low <= 1 {
                return
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        throw ValidationError("the leaders did not settle in 90 s")
    }

    private static func snapshotBytesSent(_ cluster: BenchCluster) async -> Double {
        await cluster.metricTotal("parley_snapshot_bytes_sent_total")
    }

    private static func roomsOn(_ cluster: BenchCluster, shard: Int, node: UInt64) async -> Int {
        await statuses(cluster)[node]?.shards.first { $0.shard == shard }?.rooms ?? 0
    }
}
