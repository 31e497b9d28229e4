import NIOCore
import ParleyRaft
import ParleyWire
import ParleyTransport
import ParleyPlacement

/// Issue 18, draining a node: `parley cluster drain --node ID` marks it `draining` in the registry. It keeps
/// its replicas (a drain is for a restart or an upgrade, not a removal) but stops serving: the room address
/// lookup leaves it out (E6, `EdgeDirectory`), it hands every leadership it holds to another replica
/// (`handOffLeaderships`, each second), the balancer gives it none back, and its edge moves its clients to
/// other edges (C5). `parley cluster undrain` makes it active again.
extension RaftDriver {
    public static let drainPath = "/rpc/v1/cluster/drain"
    public static let undrainPath = "/rpc/v1/cluster/undrain"
    static let drainCalls = [
        PeerCall(path: drainPath) { driver, request in driver.handleDrain(request.body, draining: true) },
        PeerCall(path: undrainPath) { driver, request in driver.handleDrain(request.body, draining: false) },
    ]
    /// Leaderships a draining node hands over per second: each costs its shard an election's worth of
    /// refused proposals, so they go a few at a time, like the balancer's.
    static let handOffsPerSecond = 8

    /// `/rpc/v1/cluster/drain` and `/rpc/v1/cluster/undrain`. Refused, changing nothing, for a node the
    /// registry does not know or that was removed, and for draining the last active node (its clients would
    /// have nowhere to go). Asking again for what holds already answers that it does.
    func handleDrain(_ body: [UInt8], draining: Bool) -> EventLoopFuture<PeerResponse> {
        registryChange(body) { id, record, state in
            let want: NodeRecord.State = draining ? .draining : .active
            guard record.state == .active || record.state == .draining else {
                return self.loop.makeSucceededFuture(.text(409, "node \(id) is \(record.state): only an active or draining node is drained or undrained"))
            }
            guard record.state != want else {
                return self.loop.makeSucceededFuture(.text(200, "node \(id) is \(want) (it already was)"))
            }
            if draining, !state.nodes.values.contains(where: { $0.state == .active && $0.id != id }) {
                return self.loop.makeSucceededFuture(.text(409, "node \(id) is the last active node: its clients would have nowhere to go"))
            }
            return self.setNodeState(id, want, done: draining
                ? "node \(id) is draining: it hands its leaderships and clients to the other nodes"
                : "node \(id) is active again")
        }
    }

    /// On a draining node, each second: hands up to `handOffsPerSecond` of the shards it leads (and the meta
    /// group) to caught-up voters that are not draining, spread by shard so no single heir takes them all.
    func handOffLeaderships(_ state: MetaState) {
        registryState = state.nodes[nodeID]?.state
        guard registryState == .draining else { return }
        let draining = Set(state.nodes.values.filter { $0.state != .active }.map(\.id))
        var handed = 0
        for shard in host.ledShards() where handed < Self.handOffsPerSecond {
            let heirs = shard.replicas.filter { $0 != nodeID && !draining.contains($0) }
            guard let heir = StableHash.rendezvousOrder(item: UInt64(shard.shard), candidates: heirs.sorted()).first else { continue }
            if host.transferLeadership(shard: shard.shard, to: heir) { handed += 1 }
        }
        if host.metaLeader == nodeID, let heir = host.caughtUpMetaVoters().first(where: { !draining.contains($0) && $0 != nodeID }) {
            if host.transferMetaLeadership(to: heir) { handed += 1 }
        }
        if handed > 0 { scheduleReady() }
    }

    /// This node's state in the registry as of the last second's placement look (no meta read of its own:
    /// the edge's hand-off follows it every second).
    public func ownRegistryState() -> EventLoopFuture<NodeRecord.State?> { loop.submit { self.registryState } }
}
