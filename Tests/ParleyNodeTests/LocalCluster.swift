import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOPosix
import ParleyAPI
import ParleyCluster
import ParleyHost
import ParleyNode
import ParleyRaft
import ParleyRooms
import ParleyWire
@testable import ParleyTransport
import ParleyPlacement

enum LocalClusterError: Error { case timeout(String), failed(String) }

/// Real `parley node` processes on 127.0.0.1 with their data in a temporary folder, and a client that
/// submits room commands to any of them over the peer port, as a tool or an edge would.
final class LocalCluster: @unchecked Sendable {
    let nodes: LocalNodeProcesses
    let shards: Int
    let directory: URL
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var client: PeerTransport?
    /// TLS for the test's own peer client, when the nodes run with `--peer-tls-*`.
    private let clientTLS: PeerTLS?

    init(size: Int = 3, shards: Int = 16, extraArguments: [String] = [], clientTLS: PeerTLS? = nil,
         opsListeners: Bool = false, environment: [String: String] = [:], founders: Int? = nil,
         clientCertificate: (certificate: String, key: String)? = nil, raftLoops: [Int] = [1, 2]) throws {
        self.shards = shards
        self.clientTLS = clientTLS
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-it-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ports = try LocalNodeProcesses.freePorts((opsListeners ? 3 : 2) * size)
        var layout = LocalNodeProcesses.Layout(count: size, httpPorts: Array(ports[0..<size]), peerPorts: Array(ports[size..<(2 * size)]),
                                               dataDirectory: directory.path,
                                               secret: "integration-secret-\(UUID().uuidString.prefix(8))", shards: shards)
        // The leader balancer moves leaders in a fresh cluster's first seconds, under tests that pick a shard's
        // leader and act on it; it is off unless a test asks for it (LeaderBalanceIntegrationTests; the chaos
        // suite and deployments run it).
        layout.extraArguments = extraArguments.contains("--leader-balance-ms") ? extraArguments
            : extraArguments + ["--leader-balance-ms", "0"]
        layout.environment = environment
        layout.founders = founders
        layout.clientTLS = clientCertificate
        // Issue 35: every cluster a test starts mixes nodes with one Raft loop and with two (shards split
        // over two loops, peers' batches and calls handed to the loop of their shard).
        layout.raftLoops = raftLoops
        if opsListeners { layout.opsPorts = Array(ports[(2 * size)...]) }
        nodes = LocalNodeProcesses(executable: try LocalNodeProcesses.parleyExecutable(), layout: layout)
    }

    var ids: [UInt64] { nodes.layout.ids }
    func http(_ id: UInt64) -> String { nodes.layout.httpURL(id) }
    /// The operator listener of node `id` (its HTTP port when the cluster has none).
    func ops(_ id: UInt64) -> String {
        nodes.layout.opsPorts.isEmpty ? http(id) : "http://127.0.0.1:\(nodes.layout.opsPorts[Int(id) - 1])"
    }
    var running: Set<UInt64> { Set(nodes.runningIDs) }

    func start(_ id: UInt64) throws { try nodes.start(id, log: directory.appendingPathComponent("node-\(id).log")) }
    func startAll() throws { for id in ids { try start(id) } }
    func kill9(_ id: UInt64) { nodes.kill9(id) }
    func pause(_ id: UInt64) { nodes.pause(id, true) }
    func resume(_ id: UInt64) { nodes.pause(id, false) }
    @discardableResult
    func stop(_ id: UInt64) -> Int32? { nodes.stop(id) }

    /// Stops every node and deletes the data and logs (kept when PARLEY_KEEP_TEST_CLUSTERS is set, to read them).
    func shutdown() async {
        nodes.killAll()
        await client?.shutdown()
        try? await group.shutdownGracefully()
        if ProcessInfo.processInfo.environment["PARLEY_KEEP_TEST_CLUSTERS"] == nil { try? FileManager.default.removeItem(at: directory) }
    }

    // MARK: Observation

    func status(_ id: UInt64, digests: Bool = false) async throws -> NodeStatusReport {
        let url = URL(string: ops(id) + "/status" + (digests ? "?digest=true" : ""))!
        var request = URLRequest(url: url)
        request.timeoutInterval = 2
        let (data, _) = try await ToolHTTP.shared.data(for: request)
        return try JSONDecoder().decode(NodeStatusReport.self, from: data)
    }

    /// Statuses of the running nodes (a node that does not answer is left out).
    func statuses(digests: Bool = false) async -> [UInt64: NodeStatusReport] {
        var out: [UInt64: NodeStatusReport] = [:]
        for id in running.sorted() { out[id] = try? await status(id, digests: digests) }
        return out
    }

    /// Polls until `check` holds, up to `seconds`.
    func eventually(_ what: String, seconds: Double = 20, _ check: () async -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await check() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw LocalClusterError.timeout("\(what)\n" + diagnosis())
    }

    /// What a timed-out test prints to say why: nodes that ended and the last lines of every node's log
    /// (the folder is removed when the test ends, so CI would otherwise keep nothing).
    func diagnosis(lines: Int = 8) -> String {
        var out = "exited nodes: \(nodes.exitedIDs)"
        for id in ids {
            let log = (try? String(contentsOf: directory.appendingPathComponent("node-\(id).log"), encoding: .utf8)) ?? ""
            let tail = log.split(separator: "\n").suffix(lines).joined(separator: "\n  ")
            out += "\nnode \(id) log:\n  \(tail)"
        }
        return out
    }

    /// Waits until the freshly started nodes agree on every shard's leader. Generous: on a CI machine
    /// running many clusters at once on two cores, starting up and settling elections can be slow, and
    /// the wait costs nothing when it is quick.
    func waitForLeaders(seconds: Double = 45) async throws {
        try await eventually("leaders", seconds: seconds) { await agreeOnLeaders() }
    }

    /// Every running node answers, every shard it holds has a leader, and all agree on each leader. With the
    /// leader balancer on (the default), also balanced: no running node leads two more shards than another,
    /// so the balancer moves nothing more and a test may pick a shard's leader and act on it.
    func agreeOnLeaders() async -> Bool {
        let all = await statuses()
        guard all.count == running.count, all.values.allSatisfy(\.ready) else { return false }
        var led = Dictionary(uniqueKeysWithValues: running.map { ($0, 0) })
        for shard in 0..<shards {
            let leaders = Set(all.values.compactMap { $0.shards.first { $0.shard == shard }?.leader })
            guard leaders.count == 1, let leader = leaders.first, running.contains(leader) else { return false }
            led[leader, default: 0] += 1
        }
        guard balancesLeaders else { return true }
        return (led.values.max() ?? 0) - (led.values.min() ?? 0) <= 1
    }

    /// Whether the nodes run the leader balancer (a test asked for it with `--leader-balance-ms N`).
    var balancesLeaders: Bool {
        let args = nodes.layout.extraArguments
        guard let i = args.firstIndex(of: "--leader-balance-ms"), i + 1 < args.count else { return true }
        return args[i + 1] != "0"
    }

    func leader(ofShard shard: Int) async -> UInt64? {
        let all = await statuses()
        let leaders = all.values.compactMap { s in s.shards.first { $0.shard == shard && $0.role == "leader" }.map { _ in s.node } }
        return leaders.count == 1 ? leaders[0] : nil
    }

    // MARK: Commands

    /// A1: lifts the message budgets of an app's rooms on every shard, for tests that send as fast as the
    /// cluster answers (they test replication, not the abuse limits).
    func unlimitedSends(app: String) async throws {
        let lifted = SendBudget.unlimited
        let shardMap = ShardMap(shardCount: shards)
        var done = Set<Int>()
        var n = 0
        // One room id per shard: the command is shard-wide, only its routing needs a room.
        while done.count < shards {
            let room = "budget-\(n)"
            n += 1
            guard done.insert(shardMap.shard(ofRoom: room)).inserted else { continue }
            let outcome = try await submitRetrying(.setSendBudget(namespace: app, lifted), room: room, via: ids[0])
            guard outcome.errorCode == nil else { throw LocalClusterError.failed("setSendBudget: \(outcome.result)") }
        }
    }

    /// `submit`, retried (as a client retries with its request key) while the answer is lost in a leader
    /// change or no leader is known yet: for idempotent set-up commands in clusters whose leaders move.
    func submitRetrying(_ command: RoomCommand, room: String, as actor: CommandActor = .appServer, via id: UInt64,
                        seconds: Double = 30) async throws -> ApplyOutcome {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            do {
                return try await submit(command, room: room, as: actor, via: id)
            } catch where Date() < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// A peer call to node `via`, as a cluster tool makes it.
    func call(_ path: String, body: [UInt8], via id: UInt64) async throws -> PeerResponse {
        try await clientTransport().call(id, path: path, body: body).get()
    }

    /// Sends a room command to node `via`, which routes it to the shard's leader.
    func submit(_ command: RoomCommand, room: String, as actor: CommandActor = .appServer, via id: UInt64) async throws
        -> ApplyOutcome {
        let transport = try await clientTransport()
        let shard = ShardMap(shardCount: shards).shard(ofRoom: room)
        let body = ShardRequest.room(shard: shard, actor: actor, command: command).encoded()
        let response = try await transport.call(id, path: "/rpc/v1/submit", body: body).get()
        guard response.status == 200 else { throw LocalClusterError.failed("status \(response.status)") }
        switch try GroupAnswer<ApplyOutcome>(decoding: response.body) {
        case .applied(let outcome): return outcome
        case .notLeader(let n): throw LocalClusterError.failed("not leader (\(n))")
        case .outcomeUnknown: throw LocalClusterError.failed("outcome unknown")
        case .unavailable(let why): throw LocalClusterError.failed(why)
        }
    }

    /// The cluster's keys for the app secrets and user tokens the tests put into the meta group.
    var secrets: MetaSecrets { MetaSecrets(clusterSecret: nodes.layout.secret) }

    /// Proposes a meta command (apps, users) through whichever node leads the meta group, as the server API would.
    func proposeMeta(_ command: MetaCommand) async throws -> MetaOutcome {
        let transport = try await clientTransport()
        for id in ids where running.contains(id) {
            guard let response = try? await transport.call(id, path: "/rpc/v1/meta/propose", body: command.encoded()).get(),
                  response.status == 200, case .applied(let outcome) = try GroupAnswer<MetaOutcome>(decoding: response.body)
            else { continue }
            return outcome
        }
        throw LocalClusterError.failed("no meta leader took \(command)")
    }

    /// Acts as a live edge named `edgeId`: renews its lease on every shard replica once a second (as a real edge
    /// does by polling its shards' event feeds), so sessions the test enters under that edge are not ended.
    func keepEdgeAlive(_ edgeId: String) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                if let transport = try? await clientTransport() {
                    // All at once, so a loaded machine cannot stretch one round past the lease; only running
                    // nodes, since a call to one not started waits for its link and would hold the round up; and
                    // each given 2 s, not the links' 10 s: one slow answer held a round past the 6 s lease in a
                    // loaded full run (the sessions of a test's edge ended: notEntered).
                    var polls: [EventLoopFuture<PeerResponse>] = []
                    for id in ids where running.contains(id) {
                        for shard in 0..<shards {
                            polls.append(transport.call(id, path: "/rpc/v1/events", body: RaftDriver.eventPollBody(shard: shard, after: nil, edgeId: edgeId, waitMillis: 0),
                                                        timeout: .seconds(2)))
                        }
                    }
                    for p in polls { _ = try? await p.get() }
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Runs a `parley` command (a CLI tool, with this cluster's secret file) to its exit, with its output.
    /// Runs `parley` with exactly `arguments` (a node started by hand) to its exit, killed after `seconds`, on a
    /// thread of its own: not the two-thread cooperative pool the test's other tasks need.
    /// `executable` (with `prefix` before the arguments) runs another program the same way (a script).
    func run(_ arguments: [String], executable: URL? = nil, prefix: [String] = [], seconds: Double) async throws
        -> (status: Int32, output: String) {
        let executable = executable ?? nodes.executable
        let all = prefix + arguments
        return try await withCheckedThrowingContinuation { done in
            Thread.detachNewThread {
                do { done.resume(returning: try Self.runToExit(executable, all, seconds: seconds)) } catch { done.resume(throwing: error) }
            }
        }
    }

    /// Runs a `parley` CLI command with this cluster's secret file, on a thread of its own.
    func parley(_ arguments: [String], seconds: Double = 60) async throws -> (status: Int32, output: String) {
        try await run(arguments + ["--secret-file", nodes.secretFile], seconds: seconds)
    }

    private static func runToExit(_ executable: URL, _ arguments: [String], seconds: Double) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = executable
        p.arguments = arguments
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        // The output is read while the command runs: one that writes more than a pipe holds (64 KiB) would
        // otherwise wait for a reader until the deadline killed it.
        let output = Mutex(Data())
        let read = DispatchSemaphore(value: 0)
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread {
            let data = handle.readDataToEndOfFile()
            output.withLock { $0 = data }
            read.signal()
        }
        let deadline = Date().addingTimeInterval(seconds)
        while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        read.wait()
        return (p.terminationStatus, String(decoding: output.withLock { $0 }, as: UTF8.self))
    }

    /// Applies a meta command (apps, users) on whichever node leads the meta group.
    func meta(_ command: MetaCommand) async throws {
        let transport = try await clientTransport()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            for id in ids {
                guard let response = try? await transport.call(id, path: "/rpc/v1/meta/propose", body: command.encoded()).get(),
                      response.status == 200, let answer = try? GroupAnswer<MetaOutcome>(decoding: response.body) else { continue }
                switch answer {
                case .applied(.refused(_, let why)): throw LocalClusterError.failed("meta refused: \(why)")
                case .applied: return
                default: continue
                }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LocalClusterError.failed("meta command not applied")
    }

    /// The `host:port` a client uses for node `id`.
    /// The meta state as node `id` serves it to peers (what a test reads back to see that nothing changed).
    func metaState(via id: UInt64) async throws -> MetaState {
        try MetaState(restoring: try await metaStateBytes(via: id))
    }

    /// `/rpc/v1/meta/state` as it crosses the peer port.
    func metaStateBytes(via id: UInt64) async throws -> [UInt8] {
        let response = try await clientTransport().call(id, path: "/rpc/v1/meta/state", body: []).get()
        guard response.status == 200 else { throw LocalClusterError.failed("meta/state: \(response.status)") }
        return response.body
    }

    func clientAddress(_ id: UInt64) -> String { http(id).replacingOccurrences(of: "http://", with: "") }

    /// Polls a shard's event feed on node `id` as edge `edgeId`.
    func events(shard: Int, after cursor: UInt64?, edgeId: String, waitMillis: Int = 0, via id: UInt64) async throws
        -> ShardEventPage {
        let body = RaftDriver.eventPollBody(shard: shard, after: cursor, edgeId: edgeId, waitMillis: waitMillis)
        let response = try await clientTransport().call(id, path: "/rpc/v1/events", body: body).get()
        guard response.status == 200 else { throw LocalClusterError.failed("status \(response.status)") }
        return try ShardEventPage(decoding: response.body)
    }

    private func clientTransport() async throws -> PeerTransport {
        if let client { return client }
        // The test speaks to the nodes as a cluster tool would: with the secret, under its own id.
        var config = PeerTransport.Config(nodeID: 999, port: 0, secret: nodes.layout.secret)
        config.tls = clientTLS
        let transport = try await PeerTransport(config: config, group: group,
                                                onRaft: { _, _ in },
                                                onRequest: { _, loop in loop.makeSucceededFuture(PeerResponse(status: 404, body: [])) })
        var peers: [NodeID: (host: String, port: Int)] = [:]
        for id in ids { peers[id] = ("127.0.0.1", nodes.layout.peerPort(id)) }
        await transport.setPeers(peers)
        client = transport
        return transport
    }
}

/// Runs `body` on a fresh cluster and always stops its processes, whether `body` passes or throws.
func withLocalCluster(size: Int = 3, shards: Int = 16, extraArguments: [String] = [], clientTLS: PeerTLS? = nil,
                      opsListeners: Bool = false, environment: [String: String] = [:], founders: Int? = nil,
                      clientCertificate: (certificate: String, key: String)? = nil, raftLoops: [Int] = [1, 2],
                      _ body: (LocalCluster) async throws -> Void) async throws {
    // At most a few clusters at once: every suite starts its own, and a machine of two cores running a dozen
    // clusters at once starved the tests that time an election or a client's connect.
    await ClusterSlots.shared.acquire()
    defer { Task { await ClusterSlots.shared.release() } }
    let cluster = try LocalCluster(size: size, shards: shards, extraArguments: extraArguments, clientTLS: clientTLS,
                                   opsListeners: opsListeners, environment: environment, founders: founders,
                                   clientCertificate: clientCertificate, raftLoops: raftLoops)
    // The tests' own sessions live on edge "it-edge": keep its lease.
    let alive = cluster.keepEdgeAlive("it-edge")
    do {
        try await body(cluster)
    } catch {
        alive.cancel()
        await cluster.shutdown()
        throw error
    }
    alive.cancel()
    await cluster.shutdown()
}


/// Bounds how many local clusters the test process runs at once (`withLocalCluster`).
actor ClusterSlots {
    static let shared = ClusterSlots(limit: 3)

    private let limit: Int
    private var used = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) {
        self.limit = limit
    }

    func acquire() async {
        if used < limit {
            used += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            used -= 1
        } else {
            waiting.removeFirst().resume()  // the slot passes straight to the next test
        }
    }
}
