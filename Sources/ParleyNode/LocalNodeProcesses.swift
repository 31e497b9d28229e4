import Foundation

/// A set of `parley node` processes on 127.0.0.1 with their data under one folder: what `parley dev`,
/// `parley bench replicate` and the integration tests start.
public final class LocalNodeProcesses: @unchecked Sendable {
    public struct Layout: Sendable {
        public var count: Int
        public var httpPorts: [Int]
        public var peerPorts: [Int]
        public var dataDirectory: String
        public var secret: String
        public var shards: Int
        /// Extra `parley node` flags (e.g. `--no-fsync`).
        public var extraArguments: [String] = []
        /// Operator listeners (`--ops-listen`), one port per node; empty serves them on the HTTP port.
        public var opsPorts: [Int] = []
        /// Set in every node's environment on top of this process's own (a test's clock shift, say).
        public var environment: [String: String] = [:]
        /// Issue 17: the first `founders` nodes found the cluster (`--peers` lists them); the others join it
        /// through node 1 (`--join`). Nil: every node is a founder.
        public var founders: Int?
        /// SPEC T1: every node serves TLS on its client port with this certificate chain and key (one pair
        /// for all, made for `localhost`), and names itself `localhost:PORT` to clients (`--advertise`).
        public var clientTLS: (certificate: String, key: String)?
        /// Issue 35: node `id` runs `raftLoops[(id - 1) % count]` Raft loops (`--raft-loops`); empty: the default.
        /// The integration tests mix one and two, so every cluster they start runs both.
        public var raftLoops: [Int] = []

        public init(count: Int, httpPorts: [Int], peerPorts: [Int], dataDirectory: String, secret: String, shards: Int) {
            precondition(httpPorts.count == count && peerPorts.count == count)
            self.count = count
            self.httpPorts = httpPorts
            self.peerPorts = peerPorts
            self.dataDirectory = dataDirectory
            self.secret = secret
            self.shards = shards
        }

        public var ids: [UInt64] { (1...UInt64(count)).map { $0 } }
        public func httpURL(_ id: UInt64) -> String {
            clientTLS == nil ? "http://127.0.0.1:\(httpPorts[Int(id) - 1])" : "https://localhost:\(httpPorts[Int(id) - 1])"
        }
        public func peerPort(_ id: UInt64) -> Int { peerPorts[Int(id) - 1] }
    }

    public let executable: URL
    public let layout: Layout
    private let lock = NSLock()
    private var running: [UInt64: Process] = [:]
    /// Called (on a Foundation thread) when a node process ends, however it ends.
    public var onExit: @Sendable (UInt64, Int32) -> Void = { _, _ in }

    public init(executable: URL, layout: Layout) {
        self.executable = executable
        self.layout = layout
    }

    /// The file the nodes read the cluster secret from (SPEC A5: never on a command line).
    public var secretFile: String { layout.dataDirectory + "/cluster-secret" }

    /// Nodes that joined and now start without `--join` (what they need is in their data folder).
    private var joined = Set<UInt64>()

    /// From now on node `id` starts without `--join` (a restart of a node that joined).
    public func startsWithoutJoin(_ id: UInt64) { lock.withLock { _ = joined.insert(id) } }

    public func arguments(for id: UInt64) -> [String] {
        let founders = layout.ids.prefix(layout.founders ?? layout.count)
        let rejoining = lock.withLock { joined.contains(id) }
        let peers = founders.contains(id)
            ? ["--peers", founders.map { "\($0)=127.0.0.1:\(layout.peerPort($0))" }.joined(separator: ",")]
            : rejoining ? [] : ["--join", "127.0.0.1:\(layout.peerPort(1))"]
        return ["node", "--id", "\(id)", "--listen", "127.0.0.1:\(layout.httpPorts[Int(id) - 1])",
                "--peer-listen", "127.0.0.1:\(layout.peerPort(id))"] + peers + [
                "--data", "\(layout.dataDirectory)/node-\(id)", "--secret-file", secretFile,
                "--shards", "\(layout.shards)",
                // Local clusters (tests, benchmarks, `parley dev`) stop at once unless told otherwise: a later
                // `--drain-seconds` in `extraArguments` wins.
                "--drain-seconds", "0"]
            + (layout.opsPorts.isEmpty ? [] : ["--ops-listen", "127.0.0.1:\(layout.opsPorts[Int(id) - 1])"])
            + (layout.raftLoops.isEmpty ? [] : ["--raft-loops", "\(layout.raftLoops[(Int(id) - 1) % layout.raftLoops.count])"])
            + (layout.clientTLS.map { ["--tls-cert", $0.certificate, "--tls-key", $0.key,
                                       "--advertise", "localhost:\(layout.httpPorts[Int(id) - 1])"] } ?? [])
            + layout.extraArguments
    }

    /// Writes the cluster secret where `--secret-file` points (0600, in the folder the layout owns).
    private func writeSecretFile() throws {
        try FileManager.default.createDirectory(atPath: layout.dataDirectory, withIntermediateDirectories: true)
        let current = try? String(contentsOfFile: secretFile, encoding: .utf8)
        guard current?.trimmingCharacters(in: .whitespacesAndNewlines) != layout.secret else { return }
        FileManager.default.createFile(atPath: secretFile, contents: Data(layout.secret.utf8),
                                       attributes: [.posixPermissions: 0o600])
    }

    /// Starts node `id`; its output goes to `log` (appended) or to this process's own output.
    public func start(_ id: UInt64, log: URL? = nil) throws {
        try writeSecretFile()
        let p = Process()
        p.executableURL = executable
        p.arguments = arguments(for: id)
        if !layout.environment.isEmpty {
            p.environment = ProcessInfo.processInfo.environment.merging(layout.environment) { _, set in set }
        }
        if let log {
            try FileManager.default.createDirectory(at: log.deletingLastPathComponent(), withIntermediateDirectories: true)
            if !FileManager.default.fileExists(atPath: log.path) {
                FileManager.default.createFile(atPath: log.path, contents: nil)
            }
            let handle = try FileHandle(forWritingTo: log)
            handle.seekToEndOfFile()
            p.standardOutput = handle
            p.standardError = handle
        }
        let onExit = self.onExit
        p.terminationHandler = { process in onExit(id, process.terminationStatus) }
        try p.run()
        lock.withLock { running[id] = p }
    }

    public var runningIDs: [UInt64] { lock.withLock { running.keys.sorted() } }

    /// Nodes started and not stopped here whose process has nonetheless ended (a crash, a failed bind).
    public var exitedIDs: [UInt64] { lock.withLock { running.filter { !$0.value.isRunning }.keys.sorted() } }

    /// The process id of node `id`, while it runs.
    public func pid(_ id: UInt64) -> Int32? { lock.withLock { running[id]?.processIdentifier } }

    /// kill -9: no chance to flush or say goodbye.
    public func kill9(_ id: UInt64) {
        guard let p = lock.withLock({ running.removeValue(forKey: id) }) else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    /// SIGSTOP (`paused` true) or SIGCONT: the process stands still with its sockets open and silent, as in
    /// a long GC pause, a VM steal or a stuck disk.
    public func pause(_ id: UInt64, _ paused: Bool) {
        guard let p = lock.withLock({ running[id] }) else { return }
        kill(p.processIdentifier, paused ? SIGSTOP : SIGCONT)
    }

    /// A graceful stop (SIGTERM), waiting for the process to end; its exit status (nil: it was not running).
    @discardableResult
    public func stop(_ id: UInt64) -> Int32? {
        guard let p = lock.withLock({ running.removeValue(forKey: id) }) else { return nil }
        p.terminate()
        p.waitUntilExit()
        return p.terminationStatus
    }

    /// Asks every node to stop (SIGTERM) without waiting.
    public func terminateAll() {
        for p in lock.withLock({ Array(running.values) }) where p.isRunning { p.terminate() }
    }

    public func killAll() { for id in runningIDs { kill9(id) } }

    /// `count` ports that are free on 127.0.0.1 now and that the kernel will not hand out as the source
    /// port of an outgoing connection: they come from below the ephemeral range (read from
    /// /proc/sys/net/ipv4/ip_local_port_range). A port taken with `bind(0)` and released comes from that
    /// range, and with many clusters starting at once a peer connection of one node could take the port
    /// another node was about to listen on (it then failed to start). Each call moves on through the range
    /// from a starting point picked by the process id, so parallel test processes rarely meet either.
    public static func freePorts(_ count: Int) throws -> [Int] {
        try PortCursor.shared.take(count)
    }

    /// The `parley` executable: this process's own binary when it is `parley`, else one found beside
    /// `near` (a test binary in the build folder) or up to three folders above it.
    public static func parleyExecutable(near: URL? = nil) throws -> URL {
        if near == nil, let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
           URL(fileURLWithPath: me).lastPathComponent == "parley" {
            return URL(fileURLWithPath: me)
        }
        var dir = (near ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("parley")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        throw NodeConfigError.invalid("the parley executable was not found; run `swift build` first")
    }
}

/// Hands out listening ports below the ephemeral range, each once per process, checked free by a bind.
final class PortCursor: @unchecked Sendable {
    static let shared = PortCursor()
    private let lock = NSLock()
    private let range: Range<Int>
    private var next: Int

    init() {
        let ephemeralLow = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32_768
        range = 10_000..<max(ephemeralLow, 20_000)
        next = range.lowerBound + Int(getpid()) * 97 % range.count
    }

    func take(_ count: Int) throws -> [Int] {
        try lock.withLock {
            var ports: [Int] = []
            var tried = 0
            while ports.count < count {
                guard tried < range.count else { throw NodeConfigError.invalid("no free port on 127.0.0.1") }
                let port = next
                next = next + 1 == range.upperBound ? range.lowerBound : next + 1
                tried += 1
                if Self.isFree(port) { ports.append(port) }
            }
            return ports
        }
    }

    /// Whether a listening socket could bind `port` on 127.0.0.1 now (SO_REUSEADDR, as the node's own).
    static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
