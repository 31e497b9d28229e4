import Foundation
import Logging
import ParleyCluster
import ParleyRaft
import ParleyTransport

/// Issue 17: joining a running cluster by address, and following its registry for peers.
extension NodeRuntime {
    /// Asks the member at `seed` for the founders and the registry (`RaftDriver.joinPath`), retrying for 30 s.
    /// Refused, before anything is written, when this node's id or peer address already belongs to another
    /// member; a wrong cluster secret never gets an answer (the member refuses the credentials).
    static func learnCluster(through seed: NodeConfig.Address, transport: PeerTransport, config: NodeConfig,
                             holdsData: Bool, logger: Logger) async throws -> ClusterMembershipFile.Contents {
        await transport.setPeers([PeerTokenCheck.anyNode: (seed.host, seed.port)])
        let deadline = ContinuousClock.now + .seconds(30)
        var lastError = "no answer"
        while ContinuousClock.now < deadline {
            do {
                let info = try await RaftDriver.askToJoin(transport).get()
                if let same = info.nodes.first(where: { $0.id == config.id }), same.state == .dropped {
                    throw NodeConfigError.invalid("node id \(config.id) belonged to a node that left the cluster; "
                                                  + "a node that joins needs an id never used before (and an empty --data)")
                }
                if !holdsData, let same = info.nodes.first(where: { $0.id == config.id }) {
                    throw NodeConfigError.invalid("node id \(config.id) is already a member of the cluster (peer address "
                                                  + "\(same.peerAddress)): a new node needs an id of its own")
                }
                if let other = info.nodes.first(where: { $0.id != config.id && $0.peerAddress == "\(config.advertisedPeerAddress)" }) {
                    throw NodeConfigError.invalid("peer address \(config.advertisedPeerAddress) already belongs to node \(other.id)")
                }
                guard !info.founders.isEmpty else { throw NodeConfigError.invalid("the member at \(seed) knows no founders") }
                var peers: [NodeID: NodeConfig.Address] = [:]
                for n in info.nodes where n.state != .removed && n.state != .dropped && n.id != config.id {
                    // A member registered before it advertised its name (0.0.0.0) is reached through the seed's
                    // registry later (`followRegistry`), once it restarted and registered again.
                    if let address = NodeConfig.Address(Substring(n.peerAddress)), !NodeConfig.isEveryInterface(address.host) {
                        peers[n.id] = address
                    }
                }
                logger.notice("joining the cluster", metadata: [
                    "through": "\(seed)", "member": "\(info.answeredBy)",
                    "founders": "\(info.founders.map(String.init).joined(separator: ","))", "nodes": "\(info.nodes.count)",
                ])
                return ClusterMembershipFile.Contents(founders: info.founders, peers: peers)
            } catch let refusal as NodeConfigError {
                throw refusal
            } catch {
                lastError = "\(error)"
                if let link = await transport.linkStatus().first(where: { $0.peer == PeerTokenCheck.anyNode }),
                   let why = link.lastError {
                    lastError = why
                }
            }
            try await Task.sleep(for: .milliseconds(300))
        }
        throw NodeConfigError.invalid("cannot join the cluster through \(seed): \(lastError)")
    }

    /// Keeps the transport's peers equal to the registry (every node, with `--peers` for the founders' own
    /// addresses), so a node that joins is reached by all, and saves them on a node that joined.
    func followRegistry() async {
        var current: [NodeID: NodeConfig.Address] = [:]
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(2))
            guard let state = try? await raft.metaState().get() else { continue }
            webhooks.update(from: state)
            var peers: [NodeID: NodeConfig.Address] = [:]
            // Removed nodes too: one may still lead a group it is moving off, and its followers must answer it.
            // Dropped ones are gone: every group moved off them.
            let dropped = Set(state.nodes.values.filter { $0.state == .dropped }.map(\.id))
            for n in state.nodes.values where n.id != config.id && !dropped.contains(n.id) {
                // An address on every interface (containers) names no host: the founders' --peers do.
                if let address = NodeConfig.Address(Substring(n.peerAddress)), !NodeConfig.isEveryInterface(address.host) {
                    peers[n.id] = address
                }
            }
            for (id, address) in config.peers where id != config.id && !dropped.contains(id) { peers[id] = address }
            guard peers != current else { continue }
            let added = peers.keys.filter { current[$0] == nil }.sorted()
            current = peers
            await transport.setPeers(peers.mapValues { ($0.host, $0.port) })
            if !added.isEmpty { logger.info("peers from the registry", metadata: ["added": "\(added)"]) }
            try? membershipFile?.save(ClusterMembershipFile.Contents(founders: founders, peers: peers))
        }
    }
}
