import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOPosix
import ParleyAPI
import ParleyCluster
import ParleyRaft
import ParleyRooms

enum LocalClusterError: Error { case timeout(String), failed(String) }

/// Real `parley node` processes on 127.0.0.1 with their data in a temporary folder, and a client that
/// submits room commands to any of them over the peer port, as a tool or an edge would.
final class LocalCluster: @unchecked Sendable {
    let size: Int
    let shards: Int
    let secret = "integration-secret-\(UUID().uuidString.prefix(8))"
    let directory: URL
    let httpPorts: [Int]
    let peerPorts: [Int]
    private(set) var processes: [UInt64: Process] = [:]
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var client: PeerTransport?

    init(size: Int = 3, shards: Int = 16) throws {
        self.size = size
        self.shards = shards
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-it-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ports = try freePorts(2 * size)
        httpPorts = Array(ports[0..<size])
        peerPorts = Array(ports[size...])
    }

    var ids: [UInt64] { (1...UInt64(size)).map { $0 } }
    func http(_ id: UInt64) -> String { "http://127.0.0.1:\(httpPorts[Int(id) - 1])" }

    func start(_ id: UInt64) throws {
        let p = Process()
        p.executableURL = try parleyExecutable()
        let peers = ids.map { "\($0)=127.0.0.1:\(peerPorts[Int($0) - 1])" }.joined(separator: ",")
        p.arguments = ["node", "--id", "\(id)", "--listen", "127.0.0.1:\(httpPorts[Int(id) - 1])",
                       "--peer-listen", "127.0.0.1:\(peerPorts[Int(id) - 1])", "--peers", peers,
                       "--data", directory.appendingPathComponent("node-\(id)").path, "--secret", secret,
                       "--shards", "\(shards)"]
        let log = directory.appendingPathComponent("node-\(id).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        processes[id] = p
    }

    func startAll() throws { for id in ids { try start(id) } }

    /// kill -9: the process gets no chance to flush or say goodbye.
    func kill9(_ id: UInt64) {
        guard let p = processes.removeValue(forKey: id) else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    /// A graceful stop (SIGTERM).
    func stop(_ id: UInt64) {
        guard let p = processes.removeValue(forKey: id) else { return }
        p.terminate()
        p.waitUntilExit()
    }

    func shutdown() async {
        for id in ids { kill9(id) }
        await client?.shutdown()
        try? await group.shutdownGracefully()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Observation

    func status(_ id: UInt64, digests: Bool = false) async throws -> NodeStatusReport {
        let url = URL(string: http(id) + "/status" + (digests ? "?digest=true" : ""))!
        var request = URLRequest(url: url)
        request.timeoutInterval = 2
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONDecoder().decode(NodeStatusReport.self, from: data)
    }

    /// Statuses of the running nodes (a node that does not answer is left out).
    func statuses(digests: Bool = false) async -> [UInt64: NodeStatusReport] {
        var out: [UInt64: NodeStatusReport] = [:]
        for id in processes.keys.sorted() { out[id] = try? await status(id, digests: digests) }
        return out
    }

    /// Polls until `check` holds, up to `seconds`.
    func eventually(_ what: String, seconds: Double = 20, _ check: () async -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await check() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw LocalClusterError.timeout(what)
    }

    /// Every running node answers, every shard it holds has a leader, and all agree on each leader.
    func agreeOnLeaders() async -> Bool {
        let all = await statuses()
        guard all.count == processes.count, all.values.allSatisfy(\.ready) else { return false }
        for shard in 0..<shards {
            let leaders = Set(all.values.compactMap { $0.shards.first { $0.shard == shard }?.leader })
            guard leaders.count == 1, let leader = leaders.first, processes[leader] != nil else { return false }
        }
        return true
    }

    func leader(ofShard shard: Int) async -> UInt64? {
        let all = await statuses()
        let leaders = all.values.compactMap { s in s.shards.first { $0.shard == shard && $0.role == "leader" }.map { _ in s.node } }
        return leaders.count == 1 ? leaders[0] : nil
    }

    // MARK: Commands

    /// Sends a room command to node `via`, which routes it to the shard's leader.
    func submit(_ command: RoomCommand, room: String, as actor: CommandActor = .appServer, via id: UInt64) async throws
        -> ApplyOutcome {
        let transport = try await clientTransport()
        let shard = ShardMap(shardCount: shards).shard(ofRoom: room)
        let body = ForwardedCommand(shard: shard, actor: actor, command: command).encoded()
        let response = try await transport.call(id, path: "/rpc/v1/submit", body: body).get()
        guard response.status == 200 else { throw LocalClusterError.failed("status \(response.status)") }
        switch try ForwardedAnswer(decoding: response.body) {
        case .applied(let outcome): return outcome
        case .notLeader(let n): throw LocalClusterError.failed("not leader (\(n))")
        case .failed(let why): throw LocalClusterError.failed(why)
        }
    }

    private func clientTransport() async throws -> PeerTransport {
        if let client { return client }
        // The test speaks to the nodes as a cluster tool would: with the secret, under its own id.
        let transport = try await PeerTransport(config: .init(nodeID: 999, port: 0, secret: secret), group: group,
                                                onRaft: { _, _ in },
                                                onRequest: { _, loop in loop.makeSucceededFuture(PeerResponse(status: 404, body: [])) })
        var peers: [NodeID: (host: String, port: Int)] = [:]
        for id in ids { peers[id] = ("127.0.0.1", peerPorts[Int(id) - 1]) }
        await transport.setPeers(peers)
        client = transport
        return transport
    }
}

/// Runs `body` on a fresh cluster and always stops its processes, whether `body` passes or throws.
func withLocalCluster(size: Int = 3, shards: Int = 16, _ body: (LocalCluster) async throws -> Void) async throws {
    let cluster = try LocalCluster(size: size, shards: shards)
    do {
        try await body(cluster)
    } catch {
        await cluster.shutdown()
        throw error
    }
    await cluster.shutdown()
}

/// Ports the kernel says are free right now.
func freePorts(_ count: Int) throws -> [Int] {
    var sockets: [Int32] = []
    defer { sockets.forEach { close($0) } }
    var ports: [Int] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw LocalClusterError.failed("no free port") }
        sockets.append(fd)
        ports.append(Int(UInt16(bigEndian: addr.sin_port)))
    }
    return ports
}

/// The `parley` executable built beside this test binary.
func parleyExecutable() throws -> URL {
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = dir.appendingPathComponent("parley")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        dir = dir.deletingLastPathComponent()
    }
    throw LocalClusterError.failed("the parley executable was not built; run `swift build` first")
}
