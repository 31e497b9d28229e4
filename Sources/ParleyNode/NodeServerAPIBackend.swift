import Foundation
import ParleyAPI
import ParleyCluster
import ParleyRooms

/// The server API's view of this node: commands go through the Raft driver to their leaders (as the app
/// server), the meta state is this node's replica or a fetched copy.
struct NodeServerAPIBackend: ServerAPIBackend {
    let driver: RaftDriver

    var shardCount: Int { driver.shardMap.shardCount }

    func shard(ofRoom roomId: String) -> Int { driver.shardMap.shard(ofRoom: roomId) }

    func submit(_ command: RoomCommand, shard: Int) async throws -> ApplyOutcome {
        try await driver.submit(command, shard: shard, actor: .appServer).get()
    }

    func submitMeta(_ command: MetaCommand) async throws -> MetaOutcome {
        try await driver.submitMeta(command).get()
    }

    func metaState() async throws -> MetaState {
        guard let state = try await driver.metaState().get() else {
            throw RouteError.noLeader(what: "the meta group", last: "no meta replica answered")
        }
        return state
    }

    /// E6: every node is an edge. The shard's leader comes first (its events need no extra hop), then the
    /// other replicas, then the remaining active nodes; addresses are the nodes' HTTP listen addresses.
    func roomAddresses(roomId: String) async -> [String] {
        guard let meta = try? await metaState() else { return [] }
        let active = meta.nodes.values.filter { $0.state == .active }.sorted { $0.id < $1.id }
        var order: [UInt64] = []
        if let placement = try? await driver.placement(of: shard(ofRoom: roomId)).get() {
            if placement.leader != 0 { order.append(placement.leader) }
            order += placement.replicas.filter { $0 != placement.leader }
        }
        order += active.map(\.id).filter { !order.contains($0) }
        let byId = Dictionary(uniqueKeysWithValues: active.map { ($0.id, $0.httpAddress) })
        return order.compactMap { byId[$0] }
    }
}
