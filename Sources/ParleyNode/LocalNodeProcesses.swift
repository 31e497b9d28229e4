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
        public func httpURL(_ id: UInt64) -> String { "http://127.0.0.1:\(httpPorts[Int(id) - 1])" }
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

    public func arguments(for id: UInt64) -> [String] {
        let peers = layout.ids.map { "\($0)=127.0.0.1:\(layout.peerPort($0))" }.joined(separator: ",")
        return ["node", "--id", "\(id)", "--listen", "127.0.0.1:\(layout.httpPorts[Int(id) - 1])",
                "--peer-listen", "127.0.0.1:\(layout.peerPort(id))", "--peers", peers,
                "--data", "\(layout.dataDirectory)/node-\(id)", "--secret", layout.secret,
                "--shards", "\(layout.shards)"] + layout.extraArguments
    }

    /// Starts node `id`; its output goes to `log` (appended) or to this process's own output.
    public func start(_ id: UInt64, log: URL? = nil) throws {
        let p = Process()
        p.executableURL = executable
        p.arguments = arguments(for: id)
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

    /// The process id of node `id`, while it runs.
    public func pid(_ id: UInt64) -> Int32? { lock.withLock { running[id]?.processIdentifier } }

    /// kill -9: no chance to flush or say goodbye.
    public func kill9(_ id: UInt64) {
        guard let p = lock.withLock({ running.removeValue(forKey: id) }) else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    /// A graceful stop (SIGTERM), waiting for the process to end.
    public func stop(_ id: UInt64) {
        guard let p = lock.withLock({ running.removeValue(forKey: id) }) else { return }
        p.terminate()
        p.waitUntilExit()
    }

    /// Asks every node to stop (SIGTERM) without waiting.
    public func terminateAll() {
        for p in lock.withLock({ Array(running.values) }) where p.isRunning { p.terminate() }
    }

    public func killAll() { for id in runningIDs { kill9(id) } }

    /// Ports the kernel says are free right now (bound together, then released).
    public static func freePorts(_ count: Int) throws -> [Int] {
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
            sockets.append(fd)
            guard bound else { throw NodeConfigError.invalid("no free port on 127.0.0.1") }
            ports.append(Int(UInt16(bigEndian: addr.sin_port)))
        }
        return ports
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
