import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import ParleyCluster
import ParleyEdge
import ParleyNode
import ParleyRaft
import ParleyRooms
import ParleyPlacement

/// `parley bench client`: the path users take (issue 35). Writers on WebSockets, each in a room of its own,
/// spread round-robin over the nodes; each sends `sendMessage` and awaits its answer before the next. Reports
/// acknowledged writes per second, their p50/p99 latency, and the node processes' CPU (user + system, from
/// /proc) per write — the figures the JetStream comparison of issue 35 is made of.
struct BenchClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client", abstract: "Acknowledged writes through WebSockets, writers spread over a local cluster.")

    @Option(help: "Nodes to start.") var nodes = 3
    @Option(help: "Shard count.") var shards = 64
    @Option(help: "Writer counts, comma-separated.") var writers = "1,64"
    @Option(help: "Seconds each run measures (after a one-second warm-up).") var seconds = 10
    @Option(help: "Runs per writer count (the median run by writes/s is reported).") var runs = 3
    @Option(name: .customLong("body-bytes"), help: "Bytes of each message's body.") var bodyBytes = 100
    @Flag(help: "Skip fsync on the nodes (never for published figures).") var noFsync = false

    static let appKey = "bench"

    func run() async throws {
        let levels = writers.split(separator: ",").compactMap { Int($0) }
        guard !levels.isEmpty, levels.allSatisfy({ $0 > 0 }), seconds > 0, runs > 0, (1...60_000).contains(bodyBytes) else {
            throw ValidationError("bad --writers, --seconds, --runs or --body-bytes")
        }
        let cluster = try BenchCluster(nodes: nodes, shards: shards, fsync: !noFsync)
        try await cluster.running { clients in
            let admin = cluster.admin(shardMap: ShardMap(shardCount: shards))
            let secrets = MetaSecrets(clusterSecret: cluster.layout.secret)
            try await admin.meta(.putApp(secrets.app(Self.appKey, secret: String(repeating: "b", count: 32))))
            try await admin.unlimitedSends(namespace: AppScope.namespace(ofApp: Self.appKey, legacyApp: nil))
            try await admin.unlimitedRequests(appKey: Self.appKey)
            for i in 0..<levels.max()! {
                try await admin.meta(.putUser(secrets.user(appKey: Self.appKey, account: "w\(i)", token: "w\(i)-token")))
            }
            print("parley bench client: \(nodes) nodes, \(shards) shards, fsync \(noFsync ? "OFF" : "on"), \(bodyBytes)-byte "
                + "bodies, \(seconds) s × \(runs) runs per level, one room per writer, one send in flight per writer")
            print("writers  writes/s (median)  p50 ms  p99 ms  node CPU µs/write  (runs: writes/s)")
            for level in levels {
                try await runLevel(level, cluster: cluster, admin: admin, group: clients)
            }
        }
    }

    private struct Run {
        var writes: Int
        var rate: Double
        var p50: Double
        var p99: Double
        var cpuMicrosPerWrite: Double
    }

    private func runLevel(_ level: Int, cluster: BenchCluster, admin: ClusterAdmin, group: EventLoopGroup) async throws {
        var connections: [(channel: Channel, connection: FanoutConnection, room: String)] = []
        for i in 0..<level {
            let room = "client-\(level)-\(i)"
            let scoped = AppScope.scoped(room, in: Self.appKey)
            try await admin.room(.createRoom(CreateRoom(roomId: scoped, creator: "w\(i)", name: "Client")), roomId: scoped)
            let enter = #"{"id":2,"op":"enter","roomId":"\#(room)","auth":{"mode":"independent","appKey":"\#(Self.appKey)","account":"w\#(i)","token":"w\#(i)-token"},"nickname":"w\#(i)","avatar":"a"}"#
            let (channel, connection) = try await FanoutConnection.connect(
                host: "127.0.0.1", port: cluster.layout.httpPorts[i % cluster.layout.count], group: group,
                enterFrame: enter, tally: FanoutTally(), samplesLatency: false)
            connections.append((channel, connection, room))
        }
        let body = String(repeating: "x", count: bodyBytes)
        var results: [Run] = []
        for _ in 0..<runs {
            // Each writer loops until the deadline; the first second is not counted.
            let started = DispatchTime.now().uptimeNanoseconds
            let measureFrom = started + 1_000_000_000
            let measureUntil = measureFrom + UInt64(seconds) * 1_000_000_000
            let (cpuAtStart, latencies) = try await withThrowingTaskGroup(of: [Double].self) { writers in
                for c in connections {
                    writers.addTask {
                        var samples: [Double] = []
                        while true {
                            let t = DispatchTime.now().uptimeNanoseconds
                            if t >= measureUntil { return samples }
                            try await c.connection.sendMessage(roomId: c.room, body: body).get()
                            if t >= measureFrom { samples.append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6) }
                        }
                    }
                }
                // The CPU counters are read at the measured window's edges.
                let wait = measureFrom - min(measureFrom, DispatchTime.now().uptimeNanoseconds)
                try await Task.sleep(nanoseconds: wait)
                let cpuAtStart = cluster.nodeCPUSeconds()
                var all: [Double] = []
                for try await samples in writers { all += samples }
                return (cpuAtStart, all)
            }
            let cpu = cluster.nodeCPUSeconds() - cpuAtStart
            let sorted = latencies.sorted()
            func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[Int(p * Double(sorted.count - 1))] }
            results.append(Run(writes: sorted.count, rate: Double(sorted.count) / Double(seconds), p50: pct(0.5),
                               p99: pct(0.99), cpuMicrosPerWrite: sorted.isEmpty ? 0 : cpu * 1e6 / Double(sorted.count)))
        }
        let m = results.sorted { $0.rate < $1.rate }[results.count / 2]
        let each = results.map { String(format: "%.0f", $0.rate) }.joined(separator: ", ")
        print(String(format: "%7d  %17.0f  %6.1f  %6.1f  %17.0f", level, m.rate, m.p50, m.p99, m.cpuMicrosPerWrite) + "  (\(each))")
        let retried = connections.reduce(0) { $0 + $1.connection.budgetRetries.withLockedValue { $0 } }
        if retried > 0 {
            let edge = EdgeSettings()
            print("  (\(retried) sends waited for their connection's request budget, A1: \(edge.requestBudget.requestsPerSecond)/s, "
                + "burst \(edge.requestBudget.burst))")
        }
        for c in connections { try? await c.channel.close() }
        try await Task.sleep(for: .seconds(1))
    }
}
