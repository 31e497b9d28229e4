import ParleyCluster
import ParleyIM
import ParleyRooms
import ParleyTransport
import ParleyShardState
import ParleyPlacement

/// What the server API needs from the node: routing to shard and meta leaders, the meta state, and the edge
/// addresses of a room. `ParleyNode` implements it over the Raft driver. Every throwing call throws only
/// when no leader answered in time (the API turns that into 503 `unavailable`).
public protocol ServerAPIBackend: Sendable {
    var shardCount: Int { get }
    func shard(ofRoom roomId: String) -> Int
    /// Issue 34: the one road into a shard (a room's command or an IM one), to its leader. The request's key
    /// (SPEC A7): the shard refuses the command (10406) when the request it belongs to applied already.
    func submit(_ request: ShardRequest) async throws -> ShardOutcome
    func submitMeta(_ command: MetaCommand, requestKey: RequestKey?) async throws -> MetaOutcome
    func metaState() async throws -> MetaState
    /// The cluster's keys for app secrets and user tokens at rest.
    var metaSecrets: MetaSecrets { get }
    /// E6: edge addresses (host:port) that should serve the room, best first.
    func roomAddresses(roomId: String) async -> [String]
    /// Issue 19: the shard of a user's IM state (an app-scoped account).
    func shard(ofUser account: String) -> Int
    /// The shard of a team (an app-scoped team id).
    func shard(ofTeam teamId: String) -> Int
    /// Whether every node reads what `feature` writes (`PeerProtocol.Feature`): until then none is written.
    func everyNodeHas(_ feature: PeerProtocol.Feature) async -> Bool
    /// W1: the webhook targets this node calls (`--webhook-allow`).
    var webhookTargets: WebhookTargetRule { get }
}

extension ServerAPIBackend {
    /// A room command on its shard's leader, as the app server.
    public func submit(_ command: RoomCommand, shard: Int, requestKey: RequestKey?) async throws -> ApplyOutcome {
        try await submit(.room(shard: shard, actor: .appServer, command: command, requestKey: requestKey)).roomAnswer
    }

    /// An IM command for `account` on `shard`'s leader, as the app server.
    public func submitIm(_ command: ImShardCommand, account: String, shard: Int, requestKey: RequestKey?) async throws
        -> Result<ImApplied, ImError> {
        try await submit(.im(shard: shard, actor: .appServer, account: account, command: command, requestKey: requestKey)).imAnswer
    }

    public var webhookTargets: WebhookTargetRule { .publicOnly }
}
