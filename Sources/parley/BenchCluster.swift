import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import ParleyCluster
import ParleyNode
import ParleyRaft
#if canImport(FoundationNetworking)
import FoundationNetworking
import ParleyTransport
import ParleyPlacement
#endif

/// A local cluster of real node processes for a benchmark, with a cluster-tool client on the peer port.
final class BenchCluster: @unchecked Sendable {
    let directory: URL
    let layout: LocalNodeProcesses.Layout
    let processes: LocalNodeProcesses
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private(set) var client: PeerTransport!

    /// `founders` (nil: every node) found the cluster; the others join it through node 1 when started.
    init(nodes: Int, shards: Int, fsync: Bool, founders: Int? = nil, extraArguments: [String] = []) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-bench-\(UUID().uuidString)")
        let ports = try LocalNodeProcesses.freePorts(2 * nodes)
        var layout = LocalNodeProcesses.Layout(count: nodes, httpPorts: Array(ports[0..<nodes]), peerPorts: Array(ports[nodes...]),
                                               dataDirectory: directory.path, secret: "bench-\(UUID().uuidString)", shards: shards)
        layout.extraArguments = (fsync ? [] : ["--no-fsync"]) + extraArguments
        layout.founders = founders
        self.layout = layout
        processes = LocalNodeProcesses(executable: try LocalNodeProcesses.parleyExecutable(), layout: layout)
    }

    /// Starts the founders (every node by default) and waits until each answers `/readyz`.
    func start() async throws {
        let founders = Array(layout.ids.prefix(layout.founders ?? layout.count))
        for id in founders { try processes.start(id, log: directory.appendingPathComponent("node-\(id).log")) }
        client = try await PeerTransport(config: .init(nodeID: 900, port: 0, secret: layout.secret), group: group,
                                         onRaft: { _, _ in },
                                         onRequest: { _, loop in loop.makeSucceededFuture(PeerResponse(status: 404, body: [])) })
        var peers: [NodeID: (host: String, port: Int)] = [:]
        for id in layout.ids { peers[id] = ("127.0.0.1", layout.peerPort(id)) }
        await client.setPeers(peers)
        try await waitUntilReady(founders)
    }

    /// Starts a node that joins the running cluster (`--join` through node 1).
    func join(_ id: UInt64) throws {
        try processes.start(id, log: directory.appendingPathComponent("node-\(id).log"))
    }

    func waitUntilReady(_ ids: [UInt64], seconds: Double = 30) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        for id in ids {
            while true {
                let url = URL(string: layout.httpURL(id) + "/readyz")!
                if let (_, response) = try? await ToolHTTP.shared.data(from: url),
                   (response as? HTTPURLResponse)?.statusCode == 200 { break }
                guard Date() < deadline else { throw ValidationError("node \(id) did not become ready") }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Acts as a live edge named `edgeId` (sessions the benchmark enters through the peer port live there):
    /// renews its lease on every shard replica once a second, as a real edge does by polling its event feeds.
    /// The polls go out at once (not one after another), so a loaded cluster cannot stretch a round past the
    /// lease.
    func keepEdgeAlive(_ edgeId: String, shards: Int) -> Task<Void, Never> {
        let client = self.client!, ids = layout.ids
        return Task {
            while !Task.isCancelled {
                var polls: [EventLoopFuture<PeerResponse>] = []
                for id in ids {
                    for shard in 0..<shards {
                        polls.append(client.call(id, path: "/rpc/v1/events", body: RaftDriver.eventPollBody(shard: shard, after: nil, edgeId: edgeId, waitMillis: 0)))
                    }
                }
                for p in polls { _ = try? await p.get() }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    func admin(shardMap: ShardMap) -> ClusterAdmin { ClusterAdmin(client: client, nodes: layout.ids, shardMap: shardMap) }

    /// Resident memory of node `id` in bytes (from /proc).
    func residentBytes(_ id: UInt64) -> Int? {
        processes.pid(id).flatMap { ResidentMemory.bytes(ofProcess: "\($0)") }
    }

    /// The sum over every node's `/metrics` of the lines that start with `series` (a name with its labels).
    func metricTotal(_ series: String) async -> Double {
        var total = 0.0
        for id in layout.ids {
            guard let (data, _) = try? await ToolHTTP.shared.data(from: URL(string: layout.httpURL(id) + "/metrics")!) else { continue }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(series + " ") {
                total += Double(line.split(separator: " ").last ?? "") ?? 0
            }
        }
        return total
    }

    /// CPU time (user and system) all node processes have used so far, in seconds (from /proc).
    func nodeCPUSeconds() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return layout.ids.reduce(0) { total, id in
            guard let pid = processes.pid(id),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return total }
            // Fields after the command name: state is field 3, utime 14 and stime 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return total }
            return total + (user + system) / ticks
        }
    }

    /// Starts the cluster, runs `body` with an event loop group for the benchmark's clients (two threads),
    /// then stops both — killing the nodes at once when `body` throws.
    func running(_ body: (EventLoopGroup) async throws -> Void) async throws {
        let clients = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        do {
            try await start()
            try await body(clients)
        } catch {
            await stop(after: error)
            try? await clients.shutdownGracefully()
            throw error
        }
        await stop()
        try? await clients.shutdownGracefully()
    }

    func stop(after error: Error? = nil) async {
        if error != nil { processes.killAll() }
        await client?.shutdown()
        processes.terminateAll()
        for id in layout.ids { processes.stop(id) }
        try? await group.shutdownGracefully()
        try? FileManager.default.removeItem(at: directory)
    }
}
