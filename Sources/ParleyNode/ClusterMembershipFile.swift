import Foundation
import ParleyCluster
import ParleyRaft

/// Issue 17: what a node that joined a running cluster must know to start again without `--join`: the
/// founders (where the meta group lives) and the peers' addresses as the registry last listed them. Kept in
/// the data folder as `cluster-members`, lines of `founders 1,2,3` and `node ID PEER-ADDRESS`.
struct ClusterMembershipFile {
    let path: String

    init(directory: String) {
        path = directory + "/cluster-members"
    }

    struct Contents: Equatable {
        var founders: [NodeID]
        var peers: [NodeID: NodeConfig.Address]
    }

    func load() -> Contents? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        var founders: [NodeID] = []
        var peers: [NodeID: NodeConfig.Address] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == "founders" {
                founders = parts[1].split(separator: ",").compactMap { NodeID($0) }
            } else if parts.count == 3, parts[0] == "node", let id = NodeID(parts[1]), let address = NodeConfig.Address(parts[2]) {
                peers[id] = address
            }
        }
        return founders.isEmpty ? nil : Contents(founders: founders, peers: peers)
    }

    func save(_ contents: Contents) throws {
        var text = "founders " + contents.founders.map(String.init).joined(separator: ",") + "\n"
        for id in contents.peers.keys.sorted() { text += "node \(id) \(contents.peers[id]!)\n" }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
