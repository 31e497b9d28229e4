import ArgumentParser
import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyCluster
import ParleyNode
import ParleyRaft
import ParleyWire
import ParleyTransport

/// `parley cluster …`: the registry and membership changes, over any member's peer port with the cluster
/// secret (issue 17).
struct ClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster", abstract: "See and change the cluster's nodes.",
        subcommands: [Nodes.self, Remove.self, Replace.self, Drain.self, Undrain.self])

    struct Connection: ParsableArguments {
        @Option(help: "The peer address (host:port) of any node of the cluster.") var through = "127.0.0.1:7101"
        @Option(name: .customLong("secret-file"), help: "A file holding the cluster secret (PARLEY_SECRET_FILE).")
        var secretFile: String?
        // A cluster whose peer port speaks mutual TLS is reached with a certificate its CA signed (a node's
        // own: inside a node's container the PARLEY_PEER_TLS_* variables already name them).
        @Option(name: .customLong("peer-tls-cert"), help: "PEM certificate for a cluster with peer TLS (PARLEY_PEER_TLS_CERT).")
        var peerTLSCert: String?
        @Option(name: .customLong("peer-tls-key"), help: "Its PEM private key (PARLEY_PEER_TLS_KEY).")
        var peerTLSKey: String?
        @Option(name: .customLong("peer-tls-ca"), help: "PEM CA certificate the nodes' certificates are signed by (PARLEY_PEER_TLS_CA).")
        var peerTLSCA: String?

        func tls() throws -> PeerTLS? {
            let env = ProcessInfo.processInfo.environment
            do {
                return try NodeConfig.parsePeerTLS(cert: peerTLSCert ?? env["PARLEY_PEER_TLS_CERT"],
                                                   key: peerTLSKey ?? env["PARLEY_PEER_TLS_KEY"],
                                                   ca: peerTLSCA ?? env["PARLEY_PEER_TLS_CA"])
            } catch {
                throw ValidationError("\(error)")
            }
        }

        func secret() throws -> String {
            if let path = secretFile ?? ProcessInfo.processInfo.environment["PARLEY_SECRET_FILE"] {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    throw ValidationError("--secret-file \(path) cannot be read")
                }
                return text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            if let secret = ProcessInfo.processInfo.environment["PARLEY_SECRET"] { return secret }
            throw ValidationError("--secret-file or PARLEY_SECRET is required")
        }

        /// A peer client (with an id no node has) that learned the registry through `--through`.
        func open() async throws -> (PeerTransport, JoinInfo, MultiThreadedEventLoopGroup) {
            guard let seed = NodeConfig.Address(Substring(through)) else { throw ValidationError("--through must be host:port") }
            let (host, port) = (seed.host, seed.port)
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            var config = PeerTransport.Config(nodeID: NodeID.max - 1, port: 0, secret: try secret())
            config.tls = try tls()
            // A one-shot client: its links coming and going (at exit, to every node) are not news to its user.
            var quiet = Logger(label: "parley.cluster")
            quiet.logLevel = .error
            let client = try await PeerTransport(config: config, group: group, onRaft: { _, _ in },
                                                 onRequest: { _, loop in loop.makeSucceededFuture(PeerResponse(status: 404, body: [])) },
                                                 logger: quiet)
            await client.setPeers([PeerTokenCheck.anyNode: (host, port)])
            var last = "no answer"
            // 15 s: the member claims the join credential in the meta group, which may be electing a leader.
            for _ in 0..<60 {
                do {
                    let info = try await RaftDriver.askToJoin(client).get()
                    var peers: [NodeID: (host: String, port: Int)] = [:]
                    for n in info.nodes {
                        guard let a = NodeConfig.Address(Substring(n.peerAddress)) else { continue }
                        peers[n.id] = (a.host == "0.0.0.0" ? host : a.host, a.port)  // an address on every interface
                    }
                    peers[PeerTokenCheck.anyNode] = (host, port)  // `registry()` asks through it again
                    await client.setPeers(peers)
                    return (client, info, group)
                } catch {
                    last = "\(error)"
                    if let why = await client.linkStatus().first(where: { $0.peer == PeerTokenCheck.anyNode })?.lastError {
                        last = why
                    }
                    // Issue 33: refused credentials do not get better by asking again.
                    if last.contains("(401)") {
                        await client.shutdown()
                        throw ValidationError("credentials refused by \(through): the cluster secret (--secret-file, PARLEY_SECRET) is not the cluster's")
                    }
                }
                try await Task.sleep(for: .milliseconds(250))
            }
            await client.shutdown()
            throw ValidationError("cannot reach the cluster through \(through): \(last)")
        }
    }

    struct Nodes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registry: every node with its addresses and state.")
        @OptionGroup var connection: Connection

        func run() async throws {
            let (client, info, group) = try await connection.open()
            print("node  state     peer                   http                   founder")
            for n in info.nodes {
                let cols = ["\(n.id)".padding(toLength: 6, withPad: " ", startingAt: 0),
                            "\(n.state)".padding(toLength: 10, withPad: " ", startingAt: 0),
                            n.peerAddress.padding(toLength: 23, withPad: " ", startingAt: 0),
                            n.httpAddress.padding(toLength: 23, withPad: " ", startingAt: 0),
                            info.founders.contains(n.id) ? "yes" : ""]
                print(cols.joined())
            }
            await client.shutdown()
            try await group.shutdownGracefully()
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Mark a node removed: every replica and leader moves off it (from the others when it is down).")
        @OptionGroup var connection: Connection
        @Option(help: "The id of the node to remove.") var node: UInt64
        @Option(help: "Wait up to this many seconds until every replica moved off it and it is dropped (0: do not wait; before deleting its machine or pod).")
        var wait = 0

        func run() async throws {
            guard wait > 0 else { return try await connection.ask(RaftDriver.removePath, node: node) }
            let (client, info, group) = try await connection.open()
            defer { Task { await client.shutdown(); try? await group.shutdownGracefully() } }
            try await connection.ask(RaftDriver.removePath, node: node, using: client, info: info)
            try await connection.waitDropped(node, using: client, until: Date().addingTimeInterval(Double(wait)))
            print("node \(node) is dropped: no replica is left on it, it can be stopped and its data deleted")
        }
    }

    /// Issue 18: a dead (or retiring) node's place goes to a new one in one command. The new node is started
    /// first with `--join`; this waits for it to be an active member, removes the old one, and waits until
    /// every replica was rebuilt without it (the planner puts them on the new node, which holds none yet)
    /// and it is dropped from the registry.
    struct Replace: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace a node by one that joined (or is joining): remove the old one and wait until its replicas were rebuilt and it is dropped.")
        @OptionGroup var connection: Connection
        @Option(help: "The id of the node to replace (dead or alive).") var node: UInt64
        @Option(name: .customLong("with"), help: "The id of the new node, started with --join.") var replacement: UInt64
        @Option(help: "Seconds to wait for the new node to join and then for the old one to be dropped.") var timeout = 600

        func validate() throws {
            guard node != replacement else { throw ValidationError("--node and --with must differ") }
        }

        func run() async throws {
            let (client, info, group) = try await connection.open()
            defer { Task { await client.shutdown(); try? await group.shutdownGracefully() } }
            let deadline = Date().addingTimeInterval(Double(timeout))
            guard let old = info.nodes.first(where: { $0.id == node }) else {
                print("refused: node \(node) is not in the cluster")
                throw ExitCode.failure
            }
            if old.state == .dropped {
                print("refused: node \(node) has left the cluster already")
                throw ExitCode.failure
            }
            var registry = info
            while registry.nodes.first(where: { $0.id == replacement })?.state != .active {
                if let state = registry.nodes.first(where: { $0.id == replacement })?.state {
                    print("refused: node \(replacement) is \(state), not a new member")
                    throw ExitCode.failure
                }
                guard Date() < deadline else {
                    print("refused: node \(replacement) did not join within \(timeout) s (start it with --join first)")
                    throw ExitCode.failure
                }
                print("waiting for node \(replacement) to join")
                try await Task.sleep(for: .seconds(2))
                registry = (try? await RaftDriver.askToJoin(client).get()) ?? registry
            }
            if old.state != .removed { try await connection.ask(RaftDriver.removePath, node: node, using: client, info: registry) }
            try await connection.waitDropped(node, using: client, until: deadline)
            print("node \(node) replaced by node \(replacement): its replicas were rebuilt and it is dropped from the registry")
        }
    }

    struct Drain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drain a node before a restart or an upgrade: it leaves room address lookups, hands its shard leaderships to other replicas and its clients to other edges; it keeps its replicas.")
        @OptionGroup var connection: Connection
        @Option(help: "The id of the node to drain.") var node: UInt64

        func run() async throws { try await connection.ask(RaftDriver.drainPath, node: node) }
    }

    struct Undrain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Put a drained node back into service.")
        @OptionGroup var connection: Connection
        @Option(help: "The id of the node to put back.") var node: UInt64

        func run() async throws { try await connection.ask(RaftDriver.undrainPath, node: node) }
    }
}

extension ClusterCommand.Connection {
    /// Sends a registry change about `node` to the active nodes in turn until one that reaches the meta
    /// group answers; prints the answer, and fails on a refusal.
    func ask(_ path: String, node: UInt64) async throws {
        let (client, info, group) = try await open()
        defer { Task { await client.shutdown(); try? await group.shutdownGracefully() } }
        try await ask(path, node: node, using: client, info: info)
    }

    /// Waits until the registry shows `node` dropped (every group moved off it), saying so every 10 s.
    func waitDropped(_ node: UInt64, using client: PeerTransport, until deadline: Date) async throws {
        var lastSaid = Date.distantPast
        while true {
            if let now = try? await RaftDriver.askToJoin(client).get(),
               now.nodes.first(where: { $0.id == node })?.state == .dropped { return }
            guard Date() < deadline else {
                print("node \(node) still holds replicas: see `moves` in /status/cluster (the removal stays and goes on)")
                throw ExitCode.failure
            }
            if Date().timeIntervalSince(lastSaid) >= 10 {
                print("waiting for the replicas of node \(node) to be rebuilt elsewhere")
                lastSaid = Date()
            }
            try await Task.sleep(for: .seconds(1))
        }
    }

    func ask(_ path: String, node: UInt64, using client: PeerTransport, info: JoinInfo) async throws {
        var w = ByteWriter()
        w.write(node)
        // Any live member can pass the change to the meta group: active ones first, then draining ones.
        let asked = info.nodes.filter { $0.state == .active && $0.id != node }.map(\.id)
            + info.nodes.filter { $0.state == .draining && $0.id != node }.map(\.id)
        var last = "no node answered"
        for id in asked {
            guard let response = try? await client.call(id, path: path, body: w.bytes).get() else { continue }
            let text = String(decoding: response.body, as: UTF8.self)
            if response.status == 200 {
                print(text)
                return
            }
            last = text
            if response.status != 503 { break }
        }
        print("refused: \(last)")
        throw ExitCode.failure
    }
}
