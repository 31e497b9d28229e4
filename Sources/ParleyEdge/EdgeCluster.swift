import NIOCore
import ParleyCluster
import ParleyHost
import ParleyIM
import ParleyRooms
import ParleyTransport
import ParleyPlacement
import ParleyShardState

/// What the edge needs from the cluster. `ParleyNode` provides it over the Raft driver (commands routed to
/// shard leaders, event feeds long-polled from replicas, tokens read from the meta group); tests may provide
/// it over an in-process `RoomsState`.
public protocol EdgeCluster: Sendable {
    /// This edge for this process run (node id and boot time), so the sessions of an earlier run of the same
    /// node are never taken for live ones. Goes into every `SessionIdentity.edgeId`.
    var edgeId: String { get }
    var shardCount: Int { get }
    func shard(ofRoom roomId: String) -> ShardID

    /// Issue 34: the one road into a shard, for a room's command and an IM one alike: routed to the shard's
    /// leader, which checks and applies it; returns what it applied. Throws `EdgeClusterError`. Callers read the
    /// outcome as their command's (`ShardOutcome.roomAnswer`, `.imAnswer`; `submit(_:shard:actor:)` and
    /// `submitIm` below do).
    func submit(_ request: ShardRequest) async throws -> ShardOutcome

    /// The same, answered on `loop` (a client connection's, which then needs no task or actor hop: issue 35).
    /// The future fails with `EdgeClusterError`.
    func submit(_ request: ShardRequest, on loop: any EventLoop) -> EventLoopFuture<ShardOutcome>

    /// The shard's applied events after `cursor` (nil = start from the present: an empty page whose cursor is
    /// the replica's current applied index), waiting up to `waitMillis` for at least one. Every call also
    /// renews this edge's lease on the shard (its sessions end when it stops polling).
    func events(shard: ShardID, after cursor: UInt64?, waitMillis: Int) async throws -> ShardEventPage

    /// E4 / E5: checks a login token against the meta group's user table.
    func checkToken(appKey: String, account: String, token: String) async -> TokenVerdict

    /// E5 anonymous: whether the app key is registered.
    func appExists(_ appKey: String) async -> Bool

    /// Issue 19: whether the app has this account (`/v1/user/create`): an IM op naming anyone else is refused,
    /// so a client cannot make records for made-up users.
    func userExists(appKey: String, account: String) async -> Bool

    /// E6: the edge addresses (host:port) that should serve the room, best first.
    func roomAddresses(roomId: String) async -> [String]

    /// SPEC A1: the app's own connection request budget (nil: it has none, the edge's default applies). May
    /// be a second or so stale: the edge reads it again at every enter and IM login and while connections of
    /// the app keep sending.
    func connectionBudget(ofApp appKey: String) async -> ConnectionBudget?

    /// SPEC D3: the most messages a second this edge delivers to one room of the app (nil: no ceiling). Read
    /// as `connectionBudget` is.
    func roomCeiling(ofApp appKey: String) async -> Int?

    /// Issue 18: whether every node of the cluster reads what `feature` writes (during a rolling upgrade
    /// some may not yet); the edge falls back to what older nodes read when not.
    func everyNodeHas(_ feature: PeerProtocol.Feature) async -> Bool

    /// Issue 19: the shard of a user's IM state (an app-scoped account), and of a team (an app-scoped id).
    func shard(ofUser account: String) -> ShardID
    func shard(ofTeam teamId: String) -> ShardID

    /// Whether the registry as this node last read it holds `account` of `appKey` — without a hop or a wait;
    /// false when it cannot say (the caller then asks `userExists`, which looks again).
    func knowsUser(appKey: String, account: String) -> Bool

    /// Issue 35: the node's own replicas' feeds, several shards in one poll (nil: there are none to batch).
    var localFeeds: (any LocalEventFeeds)? { get }
}

/// Issue 35: this node's own replicas' event feeds read several shards at a time (`LocalFeed`). A shard's
/// feed is handed over to them once a single poll (`EdgeCluster.events`) was answered here by a replica that
/// knows the shard's leader, and handed back whenever such a replica no longer can feed it.
public protocol LocalEventFeeds: Sendable {
    /// The group of shards (the node's Raft loop) `shard` is polled with: a batched poll spans one.
    func partition(of shard: ShardID) -> Int
    /// Whether the shard's last single poll was answered by this node's replica, which knew the leader.
    func feedsHere(_ shard: ShardID) -> Bool
    /// One long poll of `cursors`' shards, all of `partition`; renews this edge's lease on each of them.
    func events(_ cursors: [ShardID: UInt64], partition: Int, waitMillis: Int) async throws
        -> [ShardID: RaftDriver.LocalFeedAnswer]
    /// Has `partition`'s parked batched poll answered now (a shard joins it).
    func nudge(partition: Int)
}

extension EdgeCluster {
    public func submit(_ request: ShardRequest, on loop: any EventLoop) -> EventLoopFuture<ShardOutcome> {
        loop.makeFutureWithTask { try await submit(request) }
    }

    /// A room command on its shard, as `submit(_:)` takes it.
    public func submit(_ command: RoomCommand, shard: ShardID, actor: CommandActor) async throws -> ApplyOutcome {
        try await submit(.room(shard: shard, actor: actor, command: command)).roomAnswer
    }

    /// Issue 19: an IM command for `account` (app-scoped) on `shard`, as `submit(_:)` takes it.
    public func submitIm(_ command: ImShardCommand, account: String, shard: ShardID, actor: CommandActor) async throws
        -> Result<ImApplied, ImError> {
        try await submit(.im(shard: shard, actor: actor, account: account, command: command)).imAnswer
    }

    public func knowsUser(appKey: String, account: String) -> Bool { false }

    public var localFeeds: (any LocalEventFeeds)? { nil }

    /// One process, one version.
    public func everyNodeHas(_ feature: PeerProtocol.Feature) async -> Bool { true }
}

public enum EdgeClusterError: Error, Sendable, Equatable {
    /// No leader reachable for the shard (protocol error 5030).
    case unavailable(String)
    /// No answer in time; the command may have applied (protocol error 5040).
    case timedOut
}
