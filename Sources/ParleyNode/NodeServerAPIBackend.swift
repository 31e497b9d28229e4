import Foundation
import ParleyAPI
import ParleyCluster
import ParleyIM
import ParleyRooms
import ParleyTransport
import ParleyShardState
import ParleyPlacement

/// The server API's view of this node: commands go through the Raft driver to their leaders (as the app
/// server), the meta state is this node's replica or a fetched copy.
struct NodeServerAPIBackend: ServerAPIBackend {
    let raft: RaftLoops
    let edges: NodeEdgeCluster
    let webhookTargets: WebhookTargetRule

    var metaSecrets: MetaSecrets { edges.metaSecrets }

    var shardCount: Int { raft.shardMap.shardCount }

    func shard(ofRoom roomId: String) -> Int { raft.shardMap.shard(ofRoom: roomId) }

    func submit(_ request: ShardRequest) async throws -> ShardOutcome {
        try await raft.submit(request).get()
    }

    func submitMeta(_ command: MetaCommand, requestKey: RequestKey?) async throws -> MetaOutcome {
        try await raft.submitMeta(command, requestKey: requestKey).get()
    }

    func metaState() async throws -> MetaState {
        guard let state = try await raft.metaState().get() else {
            throw RouteError.noLeader(what: "the meta group", last: "no meta replica answered")
        }
        return state
    }

    /// E6: the live edges for the room by rendezvous hashing (docs/cluster.md), the same answer the edge
    /// gives: one room's members gather on the same first edge; draining and unreachable nodes are left out.
    func roomAddresses(roomId: String) async -> [String] {
        await edges.roomAddresses(roomId: roomId)
    }

    func shard(ofUser account: String) -> Int { raft.shard(ofUser: account) }

    func shard(ofTeam teamId: String) -> Int { raft.shard(ofTeam: teamId) }

    func everyNodeHas(_ feature: PeerProtocol.Feature) async -> Bool { await edges.everyNodeHas(feature) }
}
