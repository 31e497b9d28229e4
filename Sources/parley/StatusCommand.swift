import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyAPI
import ParleyNode

/// `parley status`: a node's view of the cluster as a table.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show a node's /status as a table.")

    @Option(help: "The node's operator address (--ops-listen; its HTTP address when it has none). parley dev: 8201.") var node = "http://127.0.0.1:8201"
    @Flag(help: "Refresh every second until Ctrl-C.") var watch = false

    func run() async throws {
        repeat {
            let text: String
            do {
                text = StatusTable.render(try await Self.fetch(node))
            } catch {
                text = "cannot read \(node)/status: \(error)\n"
                if !watch {
                    FileHandle.standardError.write(Data(text.utf8))
                    throw ExitCode.failure
                }
            }
            if watch { print("\u{1B}[2J\u{1B}[H", terminator: "") }
            print(text, terminator: "")
            if watch { try await Task.sleep(for: .seconds(1)) }
        } while watch
    }

    static func fetch(_ node: String) async throws -> NodeStatusReport {
        guard let url = URL(string: node.hasSuffix("/") ? node + "status" : node + "/status") else {
            throw ValidationError("bad --node URL")
        }
        let (data, _) = try await ToolHTTP.shared.data(from: url)
        return try JSONDecoder().decode(NodeStatusReport.self, from: data)
    }
}

/// Renders a status report for people.
enum StatusTable {
    static func render(_ r: NodeStatusReport) -> String {
        var out = "node \(r.node)  v\(r.version)  up \(Int(r.uptimeSeconds))s  http \(r.httpAddress)  peer \(r.peerAddress)"
        out += "  \(r.healthy ? "healthy" : "UNHEALTHY")  \(r.ready ? "ready" : "NOT READY")\n"
        out += "peers: " + (r.peers.isEmpty ? "none" : r.peers.map {
            "\($0.id)@\($0.address) \($0.connected ? "up" : "down")" + ($0.droppedBatches > 0 ? " dropped=\($0.droppedBatches)" : "")
        }.joined(separator: ", ")) + "\n"
        if let m = r.meta {
            out += "meta: leader \(m.leader.map { $0 == 0 ? "-" : "\($0)" } ?? "(not held here)"), placement v\(m.placementVersion), "
            out += "nodes " + m.nodes.map { "\($0.id)(\($0.state))" }.joined(separator: " ") + ", \(m.apps) apps\n"
        } else {
            out += "meta: unreachable\n"
        }
        // Issue 18: what a drain waits for (clients and leaderships gone), and why the node is not ready.
        if let e = r.edge {
            out += "edge: \(e.connections) connections, \(e.sessions) sessions; this node leads "
                + "\(r.shards.filter { $0.role == "leader" }.count) shards\n"
        }
        if let why = r.notReadyBecause { out += "not ready: \(why)\n" }
        // Issue 17: leaders per node as this node's replicas know them (every shard when it holds them all).
        let leadersByNode = Dictionary(grouping: r.shards.filter { $0.leader != 0 }, by: \.leader).mapValues(\.count)
        out += "leaders: " + (leadersByNode.isEmpty ? "none known" : leadersByNode.keys.sorted().map { "\($0)=\(leadersByNode[$0]!)" }
            .joined(separator: " ")) + " (of the \(r.shards.count) shards held here)\n"

        let rows = [["shard", "role", "term", "leader", "commit", "applied", "log", "snapshot", "rooms", "quiet", "members"]]
            + r.shards.map { s in
                ["\(s.shard)", s.role, "\(s.term)", s.leader == 0 ? "-" : "\(s.leader)", "\(s.commit)", "\(s.applied)",
                 "\(s.logSize)", "\(s.lastSnapshot)", "\(s.rooms)", s.quiesced ? "yes" : "", Self.members(s)]
            }
        let widths = rows[0].indices.map { c in rows.map { $0[c].count }.max()! }
        for row in rows {
            out += zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
            out += "\n"
        }
        let leaders = r.shards.filter { $0.role == "leader" }.count
        out += "\(r.shards.count) shards here, \(leaders) led by this node\n"
        let moving = r.shards.filter { !($0.learners ?? []).isEmpty || $0.joint == true }.map(\.shard)
        if !moving.isEmpty { out += "replica moves under way: shards \(moving.map(String.init).joined(separator: ", "))\n" }
        for m in r.moves ?? [] {
            let learners = m.learners.map { l in
                l.bySnapshot ? "\(l.node) snapshot \(l.snapshotBytesSent)/\(l.snapshotBytes) B" : "\(l.node) log \(l.match)/\(m.commit)"
            }
            out += "move: \(m.shard < 0 ? "meta" : "shard \(m.shard)") voters \(m.voters.map(String.init).joined(separator: ","))"
                + (m.joint ? " (joint)" : "") + " → \(m.target.map(String.init).joined(separator: ","))"
                + (learners.isEmpty ? "" : ", learning: " + learners.joined(separator: "; ")) + "; next: \(m.step)\n"
        }
        return out
    }

    /// Voters, then learners after a `+` (a move under way), `joint` while a change is half done.
    static func members(_ s: NodeStatusReport.Shard) -> String {
        guard let voters = s.voters else { return "" }
        var text = voters.map(String.init).joined(separator: ",")
        if let learners = s.learners, !learners.isEmpty { text += " +" + learners.map(String.init).joined(separator: ",") }
        if s.joint == true { text += " joint" }
        return text
    }
}
