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

    /// The node that gathered the report.
    public var gatheredBy: UInt64
    public var nodes: [Node]

    public init(gatheredBy: UInt64, nodes: [Node]) {
        self.gatheredBy = gatheredBy
        self.nodes = nodes
    }

    /// Asks every registered node for its `/status` concurrently (`timeout` each) and answers for this node
    /// from `local` without a network hop. Without a meta view, the report holds only this node.
    public static func gather(local: NodeStatusReport, timeout: TimeInterval = 1.5) async -> ClusterStatusReport {
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
                        let status = try await fetchStatus(address, timeout: timeout)
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

    static func fetchStatus(_ address: String, timeout: TimeInterval) async throws -> NodeStatusReport {
        guard let url = URL(string: "http://\(address)/status") else { throw URLError(.badURL) }
        var request = URLRequest(url: url)
        request.timeoutInterval = timeout
        let (data, response) = try await URLSession.shared.data(for: request)
        if let http = response as? HTTPURLResponse, http.statusCode != 200 {
            throw URLError(.badServerResponse)
        }
        return try JSONDecoder().decode(NodeStatusReport.self, from: data)
    }
}
