import Metrics

/// What the router counts (the host counts its groups' work in `RaftMetrics`): commands an edge loop sent
/// straight to a leader, the peer calls this node served, and the snapshot bytes its pacer sent. One per node,
/// shared by its loops' drivers; counters are atomic, so any loop records.
final class RouteMetrics: Sendable {
    /// Issue 35: room commands an edge loop sent straight to the leader its replica knew, by what came of it
    /// (`applied`: answered there; `rerouted`: another leader, a link down or a refusal, so the driver's route
    /// took it).
    let commandsToLeader: Counter
    let commandsToLeaderRerouted: Counter
    /// Snapshot chunk bytes this node sent (`SnapshotPacer`).
    let snapshotBytesSent: Counter
    /// `parley_peer_calls_served_total{path}`: one counter per RPC path the node serves (a bounded set: an
    /// unknown path is answered 404 and not counted).
    let peerCallsServed: [String: Counter]

    init(factory: any MetricsFactory, paths: some Sequence<String>) {
        let toLeader = "parley_edge_commands_to_leader_total"
        commandsToLeader = Counter(label: toLeader, dimensions: [("result", "applied")], factory: factory)
        commandsToLeaderRerouted = Counter(label: toLeader, dimensions: [("result", "rerouted")], factory: factory)
        snapshotBytesSent = Counter(label: "parley_snapshot_bytes_sent_total", factory: factory)
        peerCallsServed = Dictionary(uniqueKeysWithValues: paths.map { path in
            (path, Counter(label: "parley_peer_calls_served_total", dimensions: [("path", path)], factory: factory))
        })
    }
}
