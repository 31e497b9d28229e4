import ArgumentParser
import Foundation
import Logging
import Metrics
import ParleyNode
import ParleyPlacement
import ParleyRooms

/// `parley node`: run one node. Every option can also come from the environment (`PARLEY_ID`,
/// `PARLEY_LISTEN`, …) or a config file of `name = value` lines (`--config`); a flag wins over the
/// environment, which wins over the file.
struct NodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "node", abstract: "Run one Parley node.")

    @Option(help: "A file of `name = value` lines using the option names below (e.g. `peer-listen = 127.0.0.1:7101`).")
    var config: String?
    @Option(help: "This node's id (a positive number, unique in the cluster).") var id: UInt64?
    @Option(help: "host:port for clients, the server API and /status (HTTP/1.1).") var listen: String?
    @Option(name: .customLong("peer-listen"), help: "host:port for other nodes (HTTP/2).") var peerListen: String?
    @Option(name: .customLong("ops-listen"), help: "host:port for /status, /status/cluster, /metrics and /dashboard (then off the client port).") var opsListen: String?
    @Option(help: "host:port clients reach this node's client port at, named in room address lookups and drain hand-offs (default: --listen; with 0.0.0.0 there, this node's peer host and the --listen port).")
    var advertise: String?
    @Option(help: "Every node with its peer address: 1=127.0.0.1:7101,2=127.0.0.1:7102,…") var peers: String?
    @Option(help: "Data folder (the node's SQLite database lives here).") var data: String?
    @Option(help: "The cluster secret shared by all nodes (≥ 8 bytes). Prefer --secret-file: a command line is readable by every user of the machine.") var secret: String?
    @Option(name: .customLong("secret-file"), help: "A file holding the cluster secret (PARLEY_SECRET_FILE; a Kubernetes or Compose secret file).") var secretFile: String?
    @Option(name: .customLong("app-file"), help: "A file of server-API apps, one KEY:SECRET per line (PARLEY_APP_FILE); added to --app.") var appFile: String?
    @Option(help: "Shard count, fixed when the cluster is created (default 64).") var shards: Int?
    @Option(help: "Replicas per shard (default 3).") var replicas: Int?
    @Option(name: .customLong("tick-ms"), help: "Raft tick in milliseconds (default 50; election after 10–20 ticks).")
    var tickMillis: Int?
    @Option(name: .customLong("webhook-allow"), help: "Webhook targets this node calls beyond public addresses: host names, addresses and CIDR ranges, comma-separated, or `any` (default: none — loopback, private and link-local targets are refused).")
    var webhookAllow: String?
    @Option(name: .customLong("webhook-drop-after"), help: "Seconds an after-event callback may wait for its app server before it is dropped unsent and counted (default 3600).")
    var webhookDropAfter: Int?
    @Option(name: .customLong("commit-notice-ms"), help: "How long a shard leader's new commit index may wait for the next append or heartbeat to carry it before it is sent to the followers by itself (default 2; 0 = at once).")
    var commitNoticeMillis: Int?
    @Option(help: "The malloc the node runs with: `system` (default: the C library's) or `jemalloc` (when the machine has Debian's libjemalloc2 and LD_PRELOAD is not set, the node starts itself again with it preloaded; less CPU per write). /status says which is in use.")
    var allocator: String?
    @Option(name: .customLong("raft-loops"), help: "Event loops the node's Raft groups run on, shard s on loop s % N (default: one per two cores, at least 1).")
    var raftLoops: Int?
    @Option(help: "Join a running cluster through the peer address (host:port) of any of its nodes; the node learns its peers from the cluster, and later starts need no --join.")
    var join: String?
    @Option(name: .customLong("leader-balance-ms"), help: "How often the meta leader evens out shard leaders across nodes (default 1000; 0 = off).")
    var leaderBalanceMillis: Int?
    @Option(name: .customLong("drain-seconds"), help: "On SIGTERM, drain first (hand clients and leaderships to the other nodes) for at most this many seconds (default 30; 0 = stop at once).")
    var drainSeconds: Int?
    @Option(name: .customLong("moves-per-node"), help: "Replicas the shards a node leads may have catching up at once while replicas move (default 2).")
    var movesPerNode: Int?
    @Option(name: .customLong("snapshot-bytes-per-second"), help: "Snapshot bytes a node sends per second, over all shards, to fill moved replicas (default 33554432 = 32 MiB; 0 = no cap).")
    var snapshotBytesPerSecond: Int?
    @Option(name: .customLong("raft-log-memory"), help: "Bytes of Raft log entries the node keeps in memory over all its shards (default 16777216 = 16 MiB; past it applied entries are read back from disk when needed).")
    var raftLogMemory: Int?
    @Option(name: .customLong("feed-bytes"), help: "Bytes of recent events each shard replica keeps for the edges' feeds (default 524288 = 512 KiB).")
    var feedBytes: Int?
    @Option(name: .customLong("history-window-bytes"), help: "Bytes of recent history each shard's rooms keep in memory together, the rest read from disk (default 524288 = 512 KiB; 0 = only each room's 5000 items; the same on every node).")
    var historyWindowBytes: Int?
    @Option(name: .customLong("im-log-window-bytes"), help: "Bytes of IM log items (conversation and team messages, notifications) each shard keeps in memory together, the rest read from disk (default 524288 = 512 KiB; 0 = only each log's 5000 items; the same on every node).")
    var imLogWindowBytes: Int?
    @Option(name: .customLong("sqlite-cache-bytes"), help: "Page cache of each of the node's two SQLite databases (default 8388608 = 8 MiB).")
    var sqliteCacheBytes: Int?
    @Option(name: .customLong("app"), help: "A server-API app KEY:SECRET put into the meta group when missing (repeatable; PARLEY_APPS / `apps` take k1:s1,k2:s2).")
    var apps: [String] = []
    @Option(name: .customLong("peer-tls-cert"), help: "PEM certificate of this node for mutual TLS on the peer port (with --peer-tls-key and --peer-tls-ca).")
    var peerTLSCert: String?
    @Option(name: .customLong("peer-tls-key"), help: "PEM private key of this node's peer certificate.")
    var peerTLSKey: String?
    @Option(name: .customLong("peer-tls-ca"), help: "PEM CA certificate peers' certificates must be signed by.")
    var peerTLSCA: String?
    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain for TLS on the client port (HTTPS, WSS; with --tls-key). A renewed file is served to the next connection.")
    var tlsCert: String?
    @Option(name: .customLong("tls-key"), help: "Its PEM private key.")
    var tlsKey: String?
    @Option(name: .customLong("max-connections"), help: "Client-port connections this node holds at most (default 15000; keep the descriptor limit above it).")
    var maxConnections: Int?
    @Option(name: .customLong("max-connections-per-address"), help: "… from one IPv4 address or IPv6 /64 (default 2000; past half full, each source's share of what is left).")
    var maxConnectionsPerAddress: Int?
    @Option(name: .customLong("delivery-spacing-ms"), help: "Least time between two writes of room events to one event loop's connections: a burst's events go to each member in one write (default 20; 0 writes each page at once; answers are never held).")
    var deliverySpacingMillis: Int?
    @Option(name: .customLong("legacy-rooms-app"), help: "The app that keeps the rooms made before apps were tenants (every node the same; docs/operations.md).")
    var legacyRoomsApp: String?
    @Flag(name: .customLong("no-fsync"), help: "Skip fsync (benchmarks only: a crash can lose acknowledged writes).")
    var noFsync = false

    func run() async throws {
        DataFolder.restrictUmask()  // the database, its WAL and secrets: the node's user's alone
        let settings = try SettingSources(file: config)
        func value(_ name: String, _ flag: String?) -> String? { flag ?? settings.value(name) }
        // First, before the node opens anything: it may start itself again with jemalloc (MemoryAllocator).
        switch value("allocator", allocator) ?? "system" {
        case "jemalloc": MemoryAllocator.preferJemalloc()
        case "system": break
        case let other: throw ValidationError("--allocator \(other): expected jemalloc or system")
        }
        guard let idText = value("id", id.map(String.init)), let nodeID = UInt64(idText) else {
            throw ValidationError("--id is required")
        }
        guard let listenText = value("listen", listen), let listenAddress = NodeConfig.Address(Substring(listenText)) else {
            throw ValidationError("--listen host:port is required")
        }
        guard let peerText = value("peer-listen", peerListen), let peerAddress = NodeConfig.Address(Substring(peerText)) else {
            throw ValidationError("--peer-listen host:port is required")
        }
        let peerList = try NodeConfig.parsePeers(value("peers", peers) ?? "\(nodeID)=\(peerAddress)")
        guard let dataDirectory = value("data", data) else { throw ValidationError("--data is required") }
        // A5: the secret from a file (or the environment) keeps it out of every process listing.
        var secretText = value("secret", secret)
        if secretText == nil, let path = value("secret-file", secretFile) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("--secret-file \(path) cannot be read")
            }
            secretText = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let clusterSecret = secretText else { throw ValidationError("--secret-file, PARLEY_SECRET or --secret is required") }

        var nodeConfig = NodeConfig(id: nodeID, listen: listenAddress, peerListen: peerAddress, peers: peerList,
                                    dataDirectory: dataDirectory, secret: clusterSecret)
        if let s = value("shards", shards.map(String.init)).flatMap(Int.init) { nodeConfig.shardCount = s }
        if let r = value("replicas", replicas.map(String.init)).flatMap(Int.init) { nodeConfig.replicationFactor = r }
        if let t = value("tick-ms", tickMillis.map(String.init)).flatMap(Int.init) { nodeConfig.tickMillis = t }
        if let w = value("webhook-allow", webhookAllow) {
            guard let rule = WebhookTargetRule(parsing: w) else {
                throw ValidationError("--webhook-allow takes host names, addresses and CIDR ranges, comma-separated, or any")
            }
            nodeConfig.webhookTargets = rule
        }
        if let d = value("webhook-drop-after", webhookDropAfter.map(String.init)) {
            guard let n = Int(d), (10...604_800).contains(n) else { throw ValidationError("--webhook-drop-after must be 10 … 604800 seconds") }
            nodeConfig.webhookDropAfterSeconds = n
        }
        if let c = value("commit-notice-ms", commitNoticeMillis.map(String.init)) {
            guard let n = Int(c), (0...1_000).contains(n) else { throw ValidationError("--commit-notice-ms must be 0 … 1000") }
            nodeConfig.commitNoticeMillis = n
        }
        if let k = value("raft-loops", raftLoops.map(String.init)) {
            guard let n = Int(k), (1...256).contains(n) else { throw ValidationError("--raft-loops must be 1 … 256") }
            nodeConfig.raftLoops = n
        }
        if let j = value("join", join), !j.isEmpty {
            guard let address = NodeConfig.Address(Substring(j)) else { throw ValidationError("--join must be host:port (a member's peer address)") }
            nodeConfig.join = address
        }
        if let b = value("leader-balance-ms", leaderBalanceMillis.map(String.init)) {
            guard let ms = Int64(b), ms >= 0 else { throw ValidationError("--leader-balance-ms must be a number of milliseconds ≥ 0") }
            nodeConfig.leaderBalance.intervalMillis = ms
        }
        if let d = value("drain-seconds", drainSeconds.map(String.init)) {
            guard let n = Int(d), (0...3600).contains(n) else { throw ValidationError("--drain-seconds must be 0 … 3600") }
            nodeConfig.drainSeconds = n
        }
        if let m = value("moves-per-node", movesPerNode.map(String.init)) {
            guard let n = Int(m), n >= 1 else { throw ValidationError("--moves-per-node must be a number ≥ 1") }
            nodeConfig.moves.maxLearnersPerNode = n
        }
        if let b = value("snapshot-bytes-per-second", snapshotBytesPerSecond.map(String.init)) {
            guard let n = Int(b), n == 0 || n >= 65_536 else {
                throw ValidationError("--snapshot-bytes-per-second must be 0 (no cap) or at least 65536")
            }
            nodeConfig.moves.snapshotBytesPerSecond = n
        }
        if let b = value("raft-log-memory", raftLogMemory.map(String.init)) {
            guard let n = Int(b), n >= 1 << 20 else { throw ValidationError("--raft-log-memory must be at least 1048576 (1 MiB)") }
            nodeConfig.memory.raftLogBytes = n
        }
        if let b = value("feed-bytes", feedBytes.map(String.init)) {
            guard let n = Int(b), n >= 16 << 10 else { throw ValidationError("--feed-bytes must be at least 16384") }
            nodeConfig.memory.feedBytesPerShard = n
        }
        if let b = value("history-window-bytes", historyWindowBytes.map(String.init)) {
            guard let n = Int(b), n == 0 || RoomsState.historyWindowRange.contains(n) else {
                throw ValidationError("--history-window-bytes must be 0 (none) or 65536 … 1099511627776")
            }
            nodeConfig.memory.historyWindowBytes = n
        }
        if let b = value("im-log-window-bytes", imLogWindowBytes.map(String.init)) {
            guard let n = Int(b), n == 0 || RoomsState.historyWindowRange.contains(n) else {  // the IM logs' range is the rooms'
                throw ValidationError("--im-log-window-bytes must be 0 (none) or 65536 … 1099511627776")
            }
            nodeConfig.memory.imLogWindowBytes = n
        }
        if let b = value("sqlite-cache-bytes", sqliteCacheBytes.map(String.init)) {
            guard let n = Int(b), n >= 1 << 20 else { throw ValidationError("--sqlite-cache-bytes must be at least 1048576 (1 MiB)") }
            nodeConfig.memory.sqliteCacheBytes = n
        }
        if noFsync || settings.value("no-fsync") == "true" { nodeConfig.durable = false }
        if let text = value("max-connections", maxConnections.map(String.init)) {
            guard let n = Int(text), n >= 16 else { throw ValidationError("--max-connections must be a number ≥ 16") }
            nodeConfig.maxConnections = n
        }
        if let text = value("max-connections-per-address", maxConnectionsPerAddress.map(String.init)) {
            guard let n = Int(text), n >= 1 else { throw ValidationError("--max-connections-per-address must be a number ≥ 1") }
            nodeConfig.maxConnectionsPerAddress = n
        }
        if let text = value("delivery-spacing-ms", deliverySpacingMillis.map(String.init)) {
            guard let n = Int(text), (0...1000).contains(n) else { throw ValidationError("--delivery-spacing-ms must be 0…1000") }
            nodeConfig.deliverySpacingMillis = n
        }
        if let app = value("legacy-rooms-app", legacyRoomsApp), !app.isEmpty { nodeConfig.legacyRoomsApp = app }
        if let text = value("advertise", advertise), !text.isEmpty {
            guard let address = NodeConfig.Address(Substring(text)), !NodeConfig.isEveryInterface(address.host) else {
                throw ValidationError("--advertise must be host:port a client can connect to")
            }
            nodeConfig.advertise = address
        }
        if let ops = value("ops-listen", opsListen), !ops.isEmpty {
            guard let address = NodeConfig.Address(Substring(ops)) else { throw ValidationError("--ops-listen must be host:port") }
            nodeConfig.opsListen = address
        }
        do {
            nodeConfig.clientTLS = try NodeConfig.parseClientTLS(cert: value("tls-cert", tlsCert), key: value("tls-key", tlsKey))
            nodeConfig.peerTLS = try NodeConfig.parsePeerTLS(cert: value("peer-tls-cert", peerTLSCert),
                                                             key: value("peer-tls-key", peerTLSKey),
                                                             ca: value("peer-tls-ca", peerTLSCA))
        } catch { throw ValidationError("\(error)") }
        do {
            var appList = apps.isEmpty ? settings.value("apps").map { [$0] } ?? [] : apps
            if let path = value("app-file", appFile) {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    throw ValidationError("--app-file \(path) cannot be read")
                }
                appList += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            }
            nodeConfig.apps = try NodeConfig.parseApps(appList)
        } catch { throw ValidationError("\(error)") }
        do { try nodeConfig.validate() } catch { throw ValidationError("\(error)") }

        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        var logger = Logger(label: "parley.node")
        logger[metadataKey: "node"] = "\(nodeID)"
        if !ProcessPrivileges.current.maySetNegativeNice {
            // libdispatch asks for nice -4 for the worker thread that serves the async main task; without
            // CAP_SYS_NICE that is refused (EACCES in strace) and the thread runs at the default priority.
            logger.info("running without the privilege to raise thread priority (CAP_SYS_NICE): the Swift runtime's request for nice -4 on one worker thread is refused and it runs at the default priority; the node needs no privilege (docs/operations.md, Privileges)")
        }
        let runtime = try await NodeRuntime(config: nodeConfig, logger: logger)
        // One node per process here, so its registry can also take what libraries record globally.
        MetricsSystem.bootstrap(runtime.metrics.factory)
        try await runtime.run()
    }
}

/// Option values from the environment and an optional config file.
struct SettingSources {
    private var file: [String: String] = [:]

    init(file path: String?) throws {
        guard let path else { return }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { throw ValidationError("\(path):\(n + 1): expected name = value") }
            file[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(in: .whitespaces)
        }
    }

    /// `PARLEY_PEER_LISTEN` for `peer-listen`, then the file.
    func value(_ name: String) -> String? {
        let env = "PARLEY_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
        return ProcessInfo.processInfo.environment[env] ?? file[name]
    }
}
