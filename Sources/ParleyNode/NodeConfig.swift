import Foundation
import NIOCore
import ParleyCluster
import ParleyHost
import ParleyRaft
import ParleyTransport
import ParleyPlacement

/// Everything a node needs to start, from flags, a config file or the environment.
public struct NodeConfig: Sendable, Equatable {
    public struct Address: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Parses `host:port` (IPv6 as `[::1]:port`).
        public init?(_ text: Substring) {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
                  (0...65535).contains(port) else { return nil }
            var host = String(text[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
            self.init(host: host, port: port)
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    public var id: NodeID
    /// Client, server-API and status port (HTTP/1.1).
    public var listen: Address
    /// Node-to-node port (HTTP/2).
    public var peerListen: Address
    /// Every node of the cluster (this one included) by id, with its peer address.
    public var peers: [NodeID: Address]
    public var dataDirectory: String
    public var secret: String
    /// The peer address other nodes reach this one at: its own entry in `--peers` (a container listens on
    /// 0.0.0.0 but is reached by its name), else `peerListen`. The registry records this one.
    public var advertisedPeerAddress: Address { peers[id] ?? peerListen }
    /// `--advertise`: where clients reach this node's client port (room address lookups, E6; the addresses of
    /// a drain's `reconnect` events, C5). Nil: `advertisedClientAddress` derives it.
    public var advertise: Address?
    /// What the registry records as this node's client address: `--advertise`, else `--listen` — unless that
    /// listens on every interface, which names no host: then this node's peer host with the listen port
    /// (a container's name, a pod's DNS name).
    public var advertisedClientAddress: Address {
        if let advertise { return advertise }
        guard Self.isEveryInterface(listen.host) else { return listen }
        return Address(host: advertisedPeerAddress.host, port: listen.port)
    }

    /// A listen host that names no host another machine could reach (`Address` drops IPv6 brackets).
    public static func isEveryInterface(_ host: String) -> Bool { host == "0.0.0.0" || host == "::" }
    public var shardCount = 64
    public var replicationFactor = 3
    public var tickMillis = 50
    public var electionTicks = 10
    public var quiesceAfterTicks: Int? = 100
    /// Issue 35: how long a shard leader's new commit index may wait for the next append or heartbeat to
    /// carry it to the followers before it is sent by itself (`--commit-notice-ms`; 0 = at once, each commit
    /// its own message to every follower and its answer). What a follower's node may add to a message's
    /// delivery to its edge's members when the room is otherwise quiet.
    public var commitNoticeMillis = 2
    /// SPEC W1: the webhook targets this node calls beyond public addresses (`--webhook-allow`).
    public var webhookTargets = WebhookTargetRule.publicOnly
    /// SPEC W4: after-event callbacks older than this are dropped unsent, counted (`--webhook-drop-after`).
    public var webhookDropAfterSeconds = 3_600
    /// SPEC D1: what the node keeps in memory, in bytes (`--raft-log-memory`, `--feed-bytes`,
    /// `--history-window-bytes`).
    public var memory = MemoryBounds()
    /// Issue 35: the event loops the node's Raft groups run on (`--raft-loops`); shard `s` on loop `s % K`
    /// (docs/cores.md). Nil: one per two cores — Raft did about 60 % of a node's work at 64 writers and the
    /// edge the rest, so half the cores go to each; on a 2-core machine one loop, which measured best there.
    public var raftLoops: Int?
    /// The Raft loops this node runs.
    public var raftLoopCount: Int { min(raftLoops ?? max(1, System.coreCount / 2), max(1, shardCount)) }
    /// Issue 17: how often the meta leader evens out shard leaders, and how many transfers a round asks for
    /// (`--leader-balance-ms`, 0 = off).
    public var leaderBalance = LeaderBalanceSettings()
    /// Issue 18: on SIGTERM the node drains first (hands its clients and leaderships to the others) for at
    /// most this many seconds, then stops (`--drain-seconds`, 0 = stop at once).
    public var drainSeconds = 30
    /// Issue 17: how replicas move (`--moves-per-node`, `--snapshot-bytes-per-second`).
    public var moves = ReplicaMoveSettings()
    /// Issue 17: `--join HOST:PORT`, the peer address of any member of a running cluster this node joins.
    /// It learns the founders and the registry from it; `--peers` then needs to list only this node.
    public var join: Address?
    /// fsync every group commit (always on in production; benchmarks say when it is off).
    public var durable = true
    /// SPEC A4: where `/status`, `/status/cluster`, `/metrics`, `/dashboard` and `/placement/…` are served
    /// (`--ops-listen`); nil serves them on `listen` with everything else. When set, the client port serves
    /// only `/ws`, `/v1/…`, `/healthz` and `/readyz`.
    public var opsListen: Address?
    /// Server-API apps (AppKey → AppSecret) this node puts into the meta group when missing (`--app`).
    public var apps: [String: String] = [:]
    /// The app that keeps the rooms made before apps were tenants (A8, `AppScope`): its rooms live in the
    /// empty namespace. Every node of a cluster must name the same app (or none).
    public var legacyRoomsApp: String?
    /// Mutual TLS on the peer port (`--peer-tls-cert`, `--peer-tls-key`, `--peer-tls-ca`); nil = cleartext h2.
    /// Every node of a cluster must agree: a TLS node and a cleartext one cannot talk.
    public var peerTLS: PeerTLS?

    /// SPEC A2: the client port's connection caps (`--max-connections`, `--max-connections-per-address`); nil
    /// keeps `EdgeSettings`' defaults (15,000 and 2,000 per IPv4 address or IPv6 /64, fair shares past half).
    public var maxConnections: Int?
    public var maxConnectionsPerAddress: Int?
    /// Issue 35 item 3: `--delivery-spacing-ms` (`EdgeSettings.deliverySpacingMillis`); nil keeps its default.
    public var deliverySpacingMillis: Int?
    /// SPEC T1: TLS on the client port (`--tls-cert`, `--tls-key`): HTTPS for the server API and WSS for
    /// clients, from PEM files re-read when they change; nil = plain HTTP (behind a TLS-terminating proxy).
    public var clientTLS: ClientCertificate?

    public struct ClientCertificate: Sendable, Equatable {
        public var certificatePath: String
        public var privateKeyPath: String

        public init(certificatePath: String, privateKeyPath: String) {
            self.certificatePath = certificatePath
            self.privateKeyPath = privateKeyPath
        }
    }

    /// Builds `clientTLS` from the two file options: both or neither.
    public static func parseClientTLS(cert: String?, key: String?) throws -> ClientCertificate? {
        switch (cert, key) {
        case (nil, nil):
            return nil
        case (let cert?, let key?):
            for path in [cert, key] where !FileManager.default.isReadableFile(atPath: path) {
                throw NodeConfigError.invalid("TLS file \(path) is not readable")
            }
            return ClientCertificate(certificatePath: cert, privateKeyPath: key)
        default:
            throw NodeConfigError.invalid("--tls-cert and --tls-key go together")
        }
    }

    /// Builds `peerTLS` from the three file options: all three or none.
    public static func parsePeerTLS(cert: String?, key: String?, ca: String?) throws -> PeerTLS? {
        switch (cert, key, ca) {
        case (nil, nil, nil):
            return nil
        case (let cert?, let key?, let ca?):
            for path in [cert, key, ca] where !FileManager.default.isReadableFile(atPath: path) {
                throw NodeConfigError.invalid("peer TLS file \(path) is not readable")
            }
            return PeerTLS(certificatePath: cert, privateKeyPath: key, trustRootsPath: ca)
        default:
            throw NodeConfigError.invalid("--peer-tls-cert, --peer-tls-key and --peer-tls-ca go together")
        }
    }

    public init(id: NodeID, listen: Address, peerListen: Address, peers: [NodeID: Address], dataDirectory: String,
                secret: String) {
        self.id = id
        self.listen = listen
        self.peerListen = peerListen
        self.peers = peers
        self.dataDirectory = dataDirectory
        self.secret = secret
    }

    /// Parses `--peers 1=127.0.0.1:7101,2=127.0.0.1:7102,…`.
    public static func parsePeers(_ text: String) throws -> [NodeID: Address] {
        var out: [NodeID: Address] = [:]
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let id = NodeID(parts[0].trimmingCharacters(in: .whitespaces)), id != 0,
                  let address = Address(Substring(parts[1].trimmingCharacters(in: .whitespaces))) else {
                throw NodeConfigError.badPeer(String(item))
            }
            guard out[id] == nil else { throw NodeConfigError.duplicatePeer(id) }
            out[id] = address
        }
        return out
    }

    /// Checks the settings a node cannot run without.
    public func validate() throws {
        guard id != 0 else { throw NodeConfigError.invalid("--id must be a positive number") }
        guard peers[id] != nil else { throw NodeConfigError.invalid("--peers must list this node (\(id))") }
        guard secret.utf8.count >= 8 else { throw NodeConfigError.invalid("--secret must be at least 8 bytes") }
        guard shardCount > 0, replicationFactor > 0 else { throw NodeConfigError.invalid("shards and replicas must be > 0") }
        guard tickMillis > 0, electionTicks > 1 else { throw NodeConfigError.invalid("tick settings out of range") }
        guard (0...1_000).contains(commitNoticeMillis) else { throw NodeConfigError.invalid("--commit-notice-ms must be 0 … 1000") }
        if let k = raftLoops, !(1...256).contains(k) { throw NodeConfigError.invalid("--raft-loops must be 1 … 256") }
    }
}

public enum NodeConfigError: Error, Equatable, CustomStringConvertible {
    case badPeer(String)
    case duplicatePeer(NodeID)
    case invalid(String)

    public var description: String {
        switch self {
        case .badPeer(let p): "bad peer '\(p)': expected id=host:port"
        case .duplicatePeer(let id): "node \(id) is listed twice in --peers"
        case .invalid(let why): why
        }
    }
}
