import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `GET /status/cluster` answers: every node the meta registry lists, each with its own `/status` as
/// it answered this node (or why it did not), so one page can show the whole cluster without asking the
/// browser to reach every node itself.
public struct ClusterStatusReport: Codable, Sendable, Equatable {
    public struct Node: Codable, Sendable, Equatable {
        public var id: UInt64
        /// Where this node asked for the status.
        public var httpAddress: String
        /// Registry state in the meta group ("active", …); nil for a node known only from `--peers`.
        public var state: String?
        public var status: NodeStatusReport?
        /// Why no status came back (timeout, refused, bad answer).
        public var error: String?

        public init(id: UInt64, httpAddress: String, state: String?, status: NodeStatusReport?, error: String?) {
            self.id = id
            self.httpAddress = httpAddress
            self.state = state
            self.status = status
            self.error = error
        }
    }

    /// Shard leaders one node holds, as the nodes that answered report them.
    public struct Leaders: Codable, Sendable, Equatable {
        public var node: UInt64
        public var leaders: Int
    }

    /// The node that gathered the report.
    public var gatheredBy: UInt64
    public var nodes: [Node]
    /// The placement table's version in the meta group (nil: no meta view).
    public var placementVersion: UInt64?
    /// Shard leaders per node that answered (the meta group not counted).
    public var leaders: [Leaders]
    /// Every move under way in the cluster, from the leaders that answered.
    public var moves: [NodeStatusReport.Move]

    public init(gatheredBy: UInt64, nodes: [Node]) {
        self.gatheredBy = gatheredBy
        self.nodes = nodes
        let answered = nodes.compactMap(\.status)
        placementVersion = answered.compactMap { $0.meta?.placementVersion }.max()
        leaders = answered.map { s in Leaders(node: s.node, leaders: s.shards.filter { $0.role == "leader" }.count) }
        moves = answered.flatMap { $0.moves ?? [] }.sorted { ($0.shard, $0.leader) < ($1.shard, $1.leader) }
    }

    /// Asks every registered node for its `/status` concurrently (`timeout` each) and answers for this node
    /// from `local` without a network hop. Without a meta view, the report holds only this node.
    /// `fetch` asks node `id` for its status (over the authenticated peer port: a node's `/status` may be on
    /// an operator address no registry lists, `--ops-listen`).
    public static func gather(local: NodeStatusReport, timeout: TimeInterval = 1.5,
                              fetch: @escaping @Sendable (UInt64, String) async throws -> NodeStatusReport)
        async -> ClusterStatusReport {
        guard let registry = local.meta?.nodes, !registry.isEmpty else {
            return ClusterStatusReport(gatheredBy: local.node, nodes: [
                Node(id: local.node, httpAddress: local.httpAddress, state: nil, status: local, error: nil),
            ])
        }
        let nodes = await withTaskGroup(of: Node.self) { group in
            for entry in registry {
                group.addTask {
                    let address = reachableAddress(http: entry.httpAddress, peer: entry.peerAddress)
                    if entry.id == local.node {
                        return Node(id: entry.id, httpAddress: address, state: entry.state, status: local, error: nil)
                    }
                    do {
                        let status = try await fetch(entry.id, address)
                        return Node(id: entry.id, httpAddress: address, state: entry.state, status: status, error: nil)
                    } catch {
                        return Node(id: entry.id, httpAddress: address, state: entry.state, status: nil,
                                    error: "\(error)")
                    }
                }
            }
            var all: [Node] = []
            for await node in group { all.append(node) }
            return all
        }
        return ClusterStatusReport(gatheredBy: local.node, nodes: nodes.sorted { $0.id < $1.id })
    }

    /// A node listening on every interface (`0.0.0.0:8101`, as in containers) registers an address no one
    /// else can dial; its peer address names the host others reach it by, so that host is used with the
    /// HTTP port.
    static func reachableAddress(http: String, peer: String) -> String {
        guard let colon = http.lastIndex(of: ":") else { return http }
        let host = http[..<colon]
        guard ["0.0.0.0", "[::]", "::", ""].contains(host), let peerColon = peer.lastIndex(of: ":") else { return http }
        return String(peer[..<peerColon]) + String(http[colon...])
    }
}
