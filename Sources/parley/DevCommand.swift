import ArgumentParser
import Foundation
import NIOPosix
import ParleyNode

/// `parley dev`: a local cluster of real node processes on 127.0.0.1, stopped together on Ctrl-C.
struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev", abstract: "Start a local multi-node cluster (real processes, SQLite under one folder).")

    @Option(help: "How many nodes.") var nodes = 3
    @Option(help: "Folder for the nodes' data (kept between runs).") var data = ".parley-dev"
    @Option(name: .customLong("http-port"), help: "HTTP port of node 1; node n uses this + n - 1.") var httpPort = 8101
    @Option(name: .customLong("peer-port"), help: "Peer (HTTP/2) port of node 1; node n uses this + n - 1.") var peerPort = 7101
    @Option(name: .customLong("ops-port"), help: "Operator port of node 1 (/status, /metrics, /dashboard); node n uses this + n - 1.") var opsPort = 8201
    @Option(help: "Shard count.") var shards = 64
    @Option(help: "The cluster secret (default: one kept in the data folder).") var secret: String?
    @Option(name: .customLong("demo-port"), help: "Port of the demo chat page and its dev-only app server (default: the HTTP port of node 1 minus 1; 0: none).")
    var demoPort: Int?
    @Flag(help: "Serve HTTPS and WSS on the client ports with a local CA's certificate for localhost (made once, in DATA/tls/).")
    var tls = false

    func validate() throws {
        guard (1...9).contains(nodes) else { throw ValidationError("--nodes must be 1 to 9") }
    }

    func run() async throws {
        DataFolder.restrictUmask()  // the secrets kept in the data folder, and the nodes it starts
        try DataFolder.prepare(data)
        var layout = LocalNodeProcesses.Layout(
            count: nodes, httpPorts: (0..<nodes).map { httpPort + $0 }, peerPorts: (0..<nodes).map { peerPort + $0 },
            dataDirectory: data, secret: try secret ?? Self.devSecret(in: data), shards: shards)
        layout.opsPorts = (0..<nodes).map { opsPort + $0 }  // A4: operator pages off the client port
        let appSecret = try Self.devAppSecret(in: data)
        // A5: the nodes read both secrets from files in the data folder (0600), none from a command line.
        let appFile = data + "/dev-apps"
        FileManager.default.createFile(atPath: appFile, contents: Data("\(Self.devAppKey):\(appSecret)\n".utf8),
                                       attributes: [.posixPermissions: 0o600])
        layout.extraArguments += ["--app-file", appFile]
        // A local cluster's webhooks go to a receiver on this machine (cluster/webhooks/receiver.py).
        layout.extraArguments += ["--webhook-allow", "127.0.0.1,::1,localhost"]
        let certificates = DevCertificates(folder: data + "/tls")
        if tls {
            try certificates.prepare()
            layout.clientTLS = (certificates.certificatePath, certificates.keyPath)
        }
        let processes = LocalNodeProcesses(executable: try LocalNodeProcesses.parleyExecutable(), layout: layout)
        let exits = ExitCounter(count: nodes)
        // Issue 18: like a service manager, a node that stops cleanly while the dev cluster runs is started again
        // (the same binary path: a rebuilt one is an upgrade), so a rolling restart or a SIGTERM drain can be
        // tried here: `kill -TERM $(cat DATA/node-N.pid)` restarts one; Ctrl-C stops all.
        let data = self.data
        processes.onExit = { id, status in
            guard !exits.isStopping else { return exits.exited() }
            // A crash or a kill -9 stays down (a dead machine, to try `parley cluster replace` on).
            guard status == 0 else {
                Self.say("node \(id) ended (status \(status)) and stays down: only a node that stopped cleanly is started again\n")
                return exits.exited()
            }
            Self.say("node \(id) stopped; starting it again in 1 s\n")
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) {
                guard !exits.isStopping else { return exits.exited() }
                do {
                    try processes.start(id)
                    Self.writePidFile(processes, id, data)
                } catch {
                    Self.say("node \(id) could not start again: \(error)\n")
                    exits.exited()
                }
            }
        }
        // Ctrl-C (or SIGTERM) asks every node to stop gracefully; this process ends when they have. Caught from
        // before the first node starts: a signal while the nodes or the demo start must not leave nodes behind.
        let signals = DispatchQueue(label: "parley.dev.signals")
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: signals)
            source.setEventHandler {
                Self.say("\nstopping…\n")
                exits.stopping()
                processes.terminateAll()
            }
            source.resume()
            sources.append(source)
        }
        for id in layout.ids {
            guard !exits.isStopping else {
                exits.exited()  // never started
                continue
            }
            try processes.start(id)
            Self.writePidFile(processes, id, data)
        }
        // A signal while the loop ran may have missed a node started after it.
        if exits.isStopping { processes.terminateAll() }

        var banner = "Parley dev cluster: \(nodes) nodes, \(shards) shards, data in \(data)/\n"
        for id in layout.ids {
            banner += "  node \(id): \(layout.httpURL(id))  (operator: http://127.0.0.1:\(layout.opsPorts[Int(id) - 1])/status, /dashboard; peer port \(layout.peerPort(id)))\n"
        }
        if tls {
            banner += "  TLS: the client ports serve HTTPS and WSS (wss://localhost:\(httpPort)/ws) with a certificate of the local CA\n"
            banner += "       \(certificates.caPath): trust it in the client (curl --cacert, EdgeTLS.certificateAuthority(pemFile:), SSL_CERT_FILE)\n"
        }
        banner += DevAppBanner(appKey: Self.devAppKey, secret: appSecret, url: layout.httpURL(1),
                               caFile: tls ? certificates.caPath : nil).text
        let demo = demoPort ?? (httpPort - 1)
        if demo != 0 {
            banner += await startDemo(port: demo, layout: layout, appSecret: appSecret)
        }
        banner += "Watch it: parley status --node http://127.0.0.1:\(opsPort) --watch      Stop: Ctrl-C\n"
        Self.say(banner)

        await exits.allExited()
        withExtendedLifetime(sources) {}
    }

    /// Issue 37: the demo chat page and the app server it needs, on 127.0.0.1:`demoPort`; its line of the banner.
    /// A port already taken turns the demo off, not the cluster.
    private func startDemo(port demoPort: Int, layout: LocalNodeProcesses.Layout, appSecret: String) async -> String {
        guard let sdk = DevDemoServer.findSDK() else {
            return "  Demo page: off (Sources/ParleyJS not found: run parley dev from the repository)\n"
        }
        do {
            let server = try DevDemoServer(sdkFolder: sdk, appKey: Self.devAppKey, appSecret: appSecret,
                                           nodeURLs: layout.ids.map { layout.httpURL($0) },
                                           caFile: tls ? DevCertificates(folder: data + "/tls").caPath : nil)
            _ = try await server.start(port: demoPort, group: MultiThreadedEventLoopGroup.singleton)
        } catch {
            return "  Demo page: off (127.0.0.1:\(demoPort): \(error); pick another with --demo-port)\n"
        }
        var line = "  Demo chat (JavaScript SDK): http://127.0.0.1:\(demoPort)/  — open it in two windows; ?edge=2 picks node 2\n"
        if tls { line += "    (the page's WSS needs the browser to trust \(data)/tls/ca.pem)\n" }
        return line
    }

    /// `DATA/node-N.pid`: what an operator trying a rolling restart here stops (`kill -TERM`).
    static func writePidFile(_ processes: LocalNodeProcesses, _ id: UInt64, _ data: String) {
        guard let pid = processes.pid(id) else { return }
        try? "\(pid)\n".write(toFile: data + "/node-\(id).pid", atomically: true, encoding: .utf8)
    }

    /// Unbuffered, so the banner shows at once even when stdout is a pipe.
    static func say(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }

    /// The development app of the server API (its secret is made once per data folder, like the cluster's).
    static let devAppKey = "dev"

    static func devAppSecret(in folder: String) throws -> String {
        try devSecret(in: folder, file: "dev-app-secret")
    }

    /// A secret made once per data folder, so restarts of the dev cluster keep talking to each other.
    static func devSecret(in folder: String, file: String = "cluster-secret") throws -> String {
        let path = folder + "/" + file
        if let existing = try? String(contentsOfFile: path, encoding: .utf8), existing.count >= 8 {
            return existing.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let fresh = (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        try fresh.write(toFile: path, atomically: true, encoding: .utf8)
        return fresh
    }
}

/// Counts node processes down to zero and wakes whoever waits for that.
final class ExitCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var running: Int
    private var waiter: CheckedContinuation<Void, Never>?

    private var stoppingAll = false

    init(count: Int) { running = count }

    /// Ctrl-C or SIGTERM: from now on an exit is counted, not restarted.
    func stopping() { lock.withLock { stoppingAll = true } }

    var isStopping: Bool { lock.withLock { stoppingAll } }

    /// Called from each node's termination handler.
    func exited() {
        let resume: CheckedContinuation<Void, Never>? = lock.withLock {
            running -= 1
            guard running == 0 else { return nil }
            defer { waiter = nil }
            return waiter
        }
        resume?.resume()
    }

    /// Returns once every node process has exited.
    func allExited() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let already = lock.withLock {
                if running == 0 { return true }
                waiter = c
                return false
            }
            if already { c.resume() }
        }
    }
}
