import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCluster
import ParleyNode
import ParleyRaft
import ParleyRooms
import ParleyWire
#if canImport(FoundationNetworking)
import FoundationNetworking
import ParleyTransport
import ParleyPlacement
#endif

/// `parley bench replicate`: replicated room commands per second and their latency on a local cluster of
/// real node processes (fsync on), at several concurrency levels. Prints a table and, with `--json`, one
/// line of JSON per run in the same form as cluster/bench/etcd-put, for the side-by-side comparison.
struct BenchReplicateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicate", abstract: "Replicated send-message commands on a local 3-node cluster.")

    @Option(help: "Nodes to start.") var nodes = 3
    @Option(help: "Shard count.") var shards = 64
    @Option(help: "Concurrency levels (requests in flight), comma-separated.") var concurrency = "1,64,1000"
    @Option(help: "Seconds per run.") var seconds = 10.0
    @Option(help: "Runs per level (the median is reported).") var runs = 3
    @Option(help: "Message body size in bytes.") var size = 64
    @Option(help: "Rooms the messages go to (spread over the shards).") var rooms = 64
    @Flag(help: "Skip fsync on the nodes (never for published figures).") var noFsync = false
    @Flag(help: "Print one JSON line per run.") var json = false
    @Flag(help: "Send each command to its shard's leader (as a leader-aware edge would) instead of round-robin.")
    var toLeader = false

    func run() async throws {
        let levels = concurrency.split(separator: ",").compactMap { Int($0) }
        guard !levels.isEmpty, levels.allSatisfy({ $0 > 0 }) else { throw ValidationError("bad --concurrency") }
        let cluster = try BenchCluster(nodes: nodes, shards: shards, fsync: !noFsync)
        let layout = cluster.layout
        do {
            try await cluster.start()
            let client: PeerTransport = cluster.client
            let alive = cluster.keepEdgeAlive("bench", shards: shards)
            defer { alive.cancel() }
            let bench = ReplicateLoad(client: client, nodes: layout.ids, shardMap: ShardMap(shardCount: shards),
                                      rooms: (0..<rooms).map { "bench-room-\($0)" }, size: size)
            try await bench.prepare()
            if toLeader { try await bench.findLeaders() }
            print("parley bench replicate: \(nodes) nodes, \(shards) shards, fsync \(noFsync ? "OFF" : "on"), "
                + "\(size)-byte messages to \(rooms) rooms, \(seconds)s × \(runs) runs per level")
            print("clients  ops/s (median)  p50 ms  p99 ms  p99.9 ms  node CPU µs/op  errors")
            for level in levels {
                var results: [ReplicateLoad.Result] = []
                for _ in 0..<runs {
                    let r = try await bench.run(clients: level, seconds: seconds, on: cluster.group.next(),
                                                nodeCPUSeconds: cluster.nodeCPUSeconds)
                    results.append(r)
                    if json { print(r.json) }
                }
                let m = results.sorted { $0.opsPerSecond < $1.opsPerSecond }[results.count / 2]
                print(String(format: "%7d  %14.0f  %6.2f  %6.2f  %8.2f  %14.1f  %d", level, m.opsPerSecond, m.p50, m.p99, m.p999,
                             m.nodeCPUMicrosPerOp, results.reduce(0) { $0 + $1.errors }))
            }
        } catch {
            await cluster.stop(after: error)
            throw error
        }
        await cluster.stop()
    }
}

/// The load: `clients` loops, each with one command in flight, sending to the nodes round-robin (a node
/// that is not the shard's leader routes the command, as etcd followers forward proposals).
struct ReplicateLoad: Sendable {
    struct Result: Sendable {
        var clients: Int
        var ops: Int
        var errors: Int
        var seconds: Double
        var p50: Double, p99: Double, p999: Double
        /// CPU time the node processes used during the run, per command (the load generator's own is not in it).
        var nodeCPUMicrosPerOp: Double
        var opsPerSecond: Double { Double(ops) / seconds }
        var json: String {
            String(format: #"{"system":"parley","clients":%d,"ops":%d,"errors":%d,"seconds":%.3f,"opsPerSecond":%.1f,"p50ms":%.3f,"p99ms":%.3f,"p999ms":%.3f,"cpuUsPerOp":%.1f}"#,
                   clients, ops, errors, seconds, opsPerSecond, p50, p99, p999, nodeCPUMicrosPerOp)
        }
    }

    let client: PeerTransport
    let nodes: [UInt64]
    let shardMap: ShardMap
    let rooms: [String]
    let size: Int
    /// The leader of each room's shard, when commands go straight to it (`--to-leader`).
    private let leaders = NIOLockedValueBox<[String: UInt64]>([:])

    private func submit(_ command: RoomCommand, room: String, actor: CommandActor, via node: UInt64) async throws -> ApplyOutcome {
        let body = ShardRequest.room(shard: shardMap.shard(ofRoom: room), actor: actor, command: command).encoded()
        let response = try await client.call(node, path: "/rpc/v1/submit", body: body).get()
        guard response.status == 200, case .applied(let outcome) = try GroupAnswer<ApplyOutcome>(decoding: response.body) else {
            throw ValidationError("command refused (status \(response.status))")
        }
        return outcome
    }

    static func sender(_ i: Int) -> CommandActor {
        .session(SessionIdentity(userId: "bench-\(i)", sessionId: "bench-\(i)#1", edgeId: "bench"))
    }

    /// Creates the rooms and puts one sender in each. The rooms have no app: their message budgets (A1) are
    /// lifted on every shard first, so the benchmark measures replication, not the abuse limits.
    func prepare(window: Int = 1) async throws {
        let lifted = SendBudget.unlimited
        var lifting = Set<Int>()
        var n = 0
        while lifting.count < shardMap.shardCount {
            let probe = "bench-budget-\(n)"
            n += 1
            guard lifting.insert(shardMap.shard(ofRoom: probe)).inserted else { continue }
            _ = try await submit(.setSendBudget(namespace: "", lifted), room: probe, actor: .appServer, via: nodes[0])
        }
        // `window` rooms at a time (a benchmark that fills a shard with thousands of rooms).
        for start in stride(from: 0, to: rooms.count, by: max(1, window)) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in start..<min(rooms.count, start + max(1, window)) {
                    let room = rooms[i]
                    group.addTask {
                        _ = try await submit(.createRoom(CreateRoom(roomId: room, creator: "bench-owner", name: room)), room: room,
                                             actor: .appServer, via: nodes[i % nodes.count])
                        let entered = try await submit(.enter(EnterRoom(roomId: room, nickname: "bench \(i)")), room: room,
                                                       actor: Self.sender(i), via: nodes[i % nodes.count])
                        guard case .success = entered.result else { throw ValidationError("enter failed: \(entered.result)") }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// Asks a node which node leads each room's shard.
    func findLeaders() async throws {
        for room in rooms {
            var w = ByteWriter()
            w.write(shardMap.shard(ofRoom: room))
            let response = try await client.call(nodes[0], path: "/rpc/v1/leader", body: w.bytes).get()
            var r = ByteReader(response.body)
            let leader = try r.readUInt64()
            guard response.status == 200, nodes.contains(leader) else { throw ValidationError("no leader for \(room)") }
            leaders.withLockedValue { $0[room] = leader }
        }
    }

    /// One simulated client: a chain of callbacks on the client transport's event loop, one command in flight,
    /// the next sent as the last is answered. (Earlier runs used a Swift task per client awaiting each answer;
    /// that load generator took about a third of a core at 15,000 commands/s, CPU the nodes share.)
    private final class Client: @unchecked Sendable {  // used only on the transport's event loop
        let load: ReplicateLoad
        let node: UInt64
        let request: [UInt8]
        let deadline: NIODeadline
        let done: EventLoopPromise<Void>
        var latencies: [Double] = []
        var errors = 0

        init(load: ReplicateLoad, node: UInt64, request: [UInt8], deadline: NIODeadline, done: EventLoopPromise<Void>) {
            self.load = load
            self.node = node
            self.request = request
            self.deadline = deadline
            self.done = done
        }

        func sendNext() {
            let sent = NIODeadline.now()
            guard sent < deadline else { return done.succeed() }
            load.client.call(node, path: "/rpc/v1/submit", body: request).whenComplete { result in
                do {
                    let response = try result.get()
                    guard response.status == 200 else { throw ValidationError("status \(response.status)") }
                    let answer = try GroupAnswer<ApplyOutcome>(decoding: response.body)
                    guard case .applied(let outcome) = answer else { throw ValidationError("not applied: \(answer)") }
                    guard case .success = outcome.result else { throw ValidationError("refused: \(outcome.result)") }
                    self.latencies.append(Double((NIODeadline.now() - sent).nanoseconds) / 1e6)
                } catch {
                    if self.errors == 0 { FileHandle.standardError.write(Data("failed: \(error)\n".utf8)) }
                    self.errors += 1
                }
                self.sendNext()
            }
        }
    }

    func run(clients: Int, seconds: Double, on loop: EventLoop, nodeCPUSeconds: () -> Double) async throws -> Result {
        let body = String(repeating: "m", count: size)
        let start = ContinuousClock.now
        let cpuBefore = nodeCPUSeconds()
        let deadline = NIODeadline.now() + .milliseconds(Int64(seconds * 1000))
        let all = (0..<clients).map { c in
            let r = c % rooms.count
            let command = RoomCommand.sendMessage(SendMessage(roomId: rooms[r], body: body))
            let request = ShardRequest.room(shard: shardMap.shard(ofRoom: rooms[r]), actor: Self.sender(r), command: command).encoded()
            return Client(load: self, node: leaders.withLockedValue { $0[rooms[r]] } ?? nodes[c % nodes.count],
                          request: request, deadline: deadline, done: loop.makePromise())
        }
        loop.execute { for client in all { client.sendNext() } }
        try await EventLoopFuture.andAllSucceed(all.map(\.done.futureResult), on: loop).get()
        let perClient = try await loop.submit { all.map { (latencies: $0.latencies, errors: $0.errors) } }.get()
        let elapsed = ContinuousClock.now - start
        let cpu = nodeCPUSeconds() - cpuBefore
        let total = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sorted = perClient.flatMap(\.latencies).sorted()
        func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[Int(p * Double(sorted.count - 1))] }
        return Result(clients: clients, ops: sorted.count, errors: perClient.reduce(0) { $0 + $1.errors }, seconds: total,
                      p50: pct(0.5), p99: pct(0.99), p999: pct(0.999),
                      nodeCPUMicrosPerOp: sorted.isEmpty ? 0 : cpu * 1e6 / Double(sorted.count))
    }
}
