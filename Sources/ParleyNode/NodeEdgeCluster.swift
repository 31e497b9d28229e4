import Foundation
import NIOCore
import NIOConcurrencyHelpers
import ParleyCluster
import ParleyHost
import ParleyEdge
import ParleyIM
import ParleyRaft
import ParleyRooms
import ParleyTransport
import ParleyPlacement
import ParleyShardState

/// The edge's view of the cluster on a real node: commands through the Raft driver (routed to shard
/// leaders), event feeds long-polled from this node's replica of each shard, or else the shard's leader (or
/// another replica while none is known),
/// tokens and edge addresses from the meta group, reachability from the peer links.
public final class NodeEdgeCluster: EdgeCluster, @unchecked Sendable {
    public let edgeId: String
    fileprivate let raft: RaftLoops
    private let transport: PeerTransport
    /// Where each shard's feed is polled; moves to the leader a page names, or to the next replica on failure.
    /// `replicatedHere`: the shards this node held a voting replica of when their feed last looked (issue 35) —
    /// a feed polling another node for one of them looks again after each poll, to come back here once its
    /// replica knows the leader.
    fileprivate let feedRoutes = NIOLockedValueBox<(nodes: [ShardID: NodeID], replicatedHere: Set<ShardID>)>(([:], []))
    private let meta = NIOLockedValueBox<(state: MetaState?, fetched: Date)>((nil, .distantPast))
    /// Feature → when every node last said it has it: a yes holds for `metaMaxAge` (as the meta state it came
    /// from does), so a client's frequent op (a read receipt) does not ask every link each time; a no is asked
    /// again at once, so an upgrade is seen when it finishes.
    private let featuresHeld = NIOLockedValueBox<[PeerProtocol.Feature: Date]>([:])
    /// How long a command may take, leader changes included.
    public var commandTimeout: TimeAmount = .seconds(5)
    /// How stale the cached meta state may be before a token or address lookup refreshes it.
    public var metaMaxAge: TimeInterval = 1
    /// Opens app secrets and digests tokens (the meta group holds neither in clear).
    public let metaSecrets: MetaSecrets

    fileprivate let metrics: EdgeMetrics?

    public init(raft: RaftLoops, transport: PeerTransport, boot: UInt64, metaSecrets: MetaSecrets, metrics: EdgeMetrics? = nil) {
        self.raft = raft
        self.metrics = metrics
        self.metaSecrets = metaSecrets
        self.transport = transport
        edgeId = "n\(raft.nodeID).\(boot)"
    }

    public var shardCount: Int { raft.shardMap.shardCount }

    public func shard(ofRoom roomId: String) -> ShardID { raft.shardMap.shard(ofRoom: roomId) }

    /// Set when the node stops: the edge's tasks that outlive its connections (feeds, slot releases) then get
    /// an error at once instead of scheduling work on Raft's event loop after it shut down (a promise NIO
    /// would report leaked, crashing a debug build at exit; found by cluster/chaos).
    fileprivate let closed = NIOLockedValueBox(false)

    /// Once this returns, no call of this edge starts on Raft's loop any more (`start` schedules under the
    /// same lock), so the node can stop the loop without waiting a fixed while for late ones.
    public func close() { closed.withLockedValue { $0 = true } }

    /// Starts `call` (which schedules work on Raft's loop) unless the node is stopping.
    fileprivate func start<T>(_ call: () -> EventLoopFuture<T>) throws -> EventLoopFuture<T> {
        try closed.withLockedValue { closed in
            if closed { throw EdgeClusterError.unavailable("the node is stopping") }
            return call()
        }
    }

    public func submit(_ request: ShardRequest) async throws -> ShardOutcome {
        try await routed { raft.submit(request, deadline: deadline(of: request)) }
    }

    public func submit(_ request: ShardRequest, on loop: any EventLoop) -> EventLoopFuture<ShardOutcome> {
        do {
            return try start { raft.submit(request, deadline: deadline(of: request), answeringOn: loop) }
                .flatMapErrorThrowing { throw Self.edgeError($0) }
        } catch {
            return loop.makeFailedFuture(error)
        }
    }

    /// How long a command may take from now; a message its app checks first (W3: a room's, or a session's
    /// one-to-one or team message) may wait for the app server that long on top.
    private func deadline(of request: ShardRequest) -> NIODeadline {
        var timeout = commandTimeout
        switch request.command {
        case .room(.sendMessage(let m)):
            if let check = raft.preSend?.checkMillis(roomId: m.roomId) { timeout = timeout + .milliseconds(Int64(check)) }
        case .im(let account, let command):
            if case .session = request.actor, let check = raft.preSend?.imCheckMillis(account: account),
               ImPreSend(command, from: account) != nil {
                timeout = timeout + .milliseconds(Int64(check))
            }
        default:
            break
        }
        return .now() + timeout
    }

    /// A routed command's failure as the edge reports it.
    private func routed<T>(_ call: () -> EventLoopFuture<T>) async throws -> T {
        let future = try start(call)
        do {
            return try await future.get()
        } catch {
            throw Self.edgeError(error)
        }
    }

    private static func edgeError(_ error: any Error) -> EdgeClusterError {
        switch error {
        case RouteError.outcomeUnknown:
            // The leader changed mid-flight: the command may have applied, so this is a timeout, not "unavailable".
            return .timedOut
        case RouteError.noLeader(let what, let last):
            return .unavailable("no leader for \(what): \(last)")
        case let e as EdgeClusterError:
            return e
        default:
            return .unavailable("\(error)")
        }
    }

    public func shard(ofUser account: String) -> ShardID { raft.shard(ofUser: account) }

    public func shard(ofTeam teamId: String) -> ShardID { raft.shard(ofTeam: teamId) }

    /// Any age of the cached registry will do for a yes: accounts are never removed (a token is revoked, the
    /// account stays), so one it holds still exists.
    public func knowsUser(appKey: String, account: String) -> Bool {
        meta.withLockedValue { $0.state?.user(appKey: appKey, account: account) != nil }
    }

    public func events(shard: ShardID, after cursor: UInt64?, waitMillis: Int) async throws -> ShardEventPage {
        var lastError: Error = EdgeClusterError.unavailable("no replica of shard \(shard)")
        // The node that answered the last poll (or the leader it named) first, without asking the Raft loop where
        // the shard lives: under load a feed polls many times a second, and that question was a second round
        // trip to the Raft loop for each poll (issue 35).
        let cached = feedRoutes.withLockedValue { $0.nodes[shard] }
        if let cached {
            do { return try await poll(shard, after: cursor, waitMillis: waitMillis, at: cached) } catch { lastError = error }
        }
        let replicas = try await start { raft.placement(of: shard) }.get()
        let here = replicas.replicas.contains(raft.nodeID)
        feedRoutes.withLockedValue { if here { $0.replicatedHere.insert(shard) } else { $0.replicatedHere.remove(shard) } }
        // This node's own replica when it is a voter that knows the leader: it applies the same entries one hop
        // after the leader, and a poll here crosses no link (issue 35). Else the leader, else any replica.
        let first = replicas.currentHere ? raft.nodeID
            : replicas.leader != 0 ? replicas.leader : replicas.replicas.first ?? raft.nodeID
        for node in ([first] + replicas.replicas.filter { $0 != first }) where node != cached {
            do { return try await poll(shard, after: cursor, waitMillis: waitMillis, at: node) } catch { lastError = error }
        }
        feedRoutes.withLockedValue { $0.nodes[shard] = nil }
        throw EdgeClusterError.unavailable("event feed of shard \(shard): \(lastError)")
    }

    /// One long poll of the shard's events at `node`; the node it names as the leader is asked next time —
    /// unless `node` is this one and its replica knows a leader (it feeds this edge, `events`). When this
    /// node's replica knows none, the next poll looks for the shard's leader again.
    private func poll(_ shard: ShardID, after cursor: UInt64?, waitMillis: Int, at node: NodeID) async throws -> ShardEventPage {
        // Checked again before each call: the node may have begun stopping while this feed waited.
        let call = try start { raft.events(shard: shard, after: cursor, edgeId: edgeId, waitMillis: waitMillis, at: node) }
        let page = try await call.get()
        let here = node == raft.nodeID
        (here ? metrics?.feedPollsHere : metrics?.feedPollsPeer)?.increment()
        if !here { raft.leaders.learned(page.leader, of: shard) }
        feedRoutes.withLockedValue { routes in
            if here {
                routes.nodes[shard] = page.leader != 0 ? node : nil
            } else {
                routes.nodes[shard] = routes.replicatedHere.contains(shard) ? nil : page.leader != 0 ? page.leader : node
            }
        }
        return page
    }

    public var localFeeds: (any LocalEventFeeds)? { self }

    public func checkToken(appKey: String, account: String, token: String) async -> TokenVerdict {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let verdict = await metaState(maxAge: metaMaxAge)?.checkToken(appKey: appKey, account: account, token: token, now: now,
                                                                                 secrets: metaSecrets)
        if let verdict, case .valid = verdict { return verdict }
        // A user or token created a moment ago may not be in the cached copy yet: look once more, fresh.
        return await metaState(maxAge: 0)?.checkToken(appKey: appKey, account: account, token: token, now: now,
                                                                                 secrets: metaSecrets)
            ?? .unknownApp
    }

    public func userExists(appKey: String, account: String) async -> Bool {
        if await metaState(maxAge: metaMaxAge)?.user(appKey: appKey, account: account) != nil { return true }
        // Created a moment ago: look once more, fresh.
        return await metaState(maxAge: 0)?.user(appKey: appKey, account: account) != nil
    }

    public func appExists(_ appKey: String) async -> Bool {
        if await metaState(maxAge: metaMaxAge)?.apps[appKey] != nil { return true }
        return await metaState(maxAge: 0)?.apps[appKey] != nil
    }

    public func connectionBudget(ofApp appKey: String) async -> ConnectionBudget? {
        await metaState(maxAge: metaMaxAge)?.connectionBudgets[appKey]
    }

    public func roomCeiling(ofApp appKey: String) async -> Int? {
        await metaState(maxAge: metaMaxAge)?.roomCeilings[appKey]
    }

    public func roomAddresses(roomId: String) async -> [String] {
        guard let state = await metaState(maxAge: metaMaxAge) else { return [] }
        var reachable: Set<NodeID> = [raft.nodeID]
        for link in await transport.linkStatus() where link.connected { reachable.insert(link.peer) }
        return EdgeDirectory.addresses(forRoom: roomId, nodes: Array(state.nodes.values), reachable: reachable)
    }

    /// Every node still in the registry (all but dropped ones, which no group names) last answered this
    /// node's links with a peer protocol version that has `feature`.
    /// As the driver's gates do (`RaftDriver.everyNode(has:)`): the links count too, and an empty registry (a
    /// founding cluster's first moment) says no rather than yes for nodes nobody asked.
    public func everyNodeHas(_ feature: PeerProtocol.Feature) async -> Bool {
        if let held = featuresHeld.withLockedValue({ $0[feature] }), Date().timeIntervalSince(held) <= metaMaxAge { return true }
        guard let state = await metaState(maxAge: metaMaxAge) else { return false }
        let members = state.nodes.values.filter { $0.state != .dropped }.map(\.id)
        guard !members.isEmpty else { return false }
        let linked = await transport.linkStatus().map(\.peer)
        let every = await transport.everyPeerHas(feature, among: Set(members).union(linked))
        featuresHeld.withLockedValue { $0[feature] = every ? Date() : nil }
        return every
    }

    private func metaState(maxAge: TimeInterval) async -> MetaState? {
        let cached = meta.withLockedValue { $0 }
        if let state = cached.state, Date().timeIntervalSince(cached.fetched) <= maxAge { return state }
        guard let call = try? start({ raft.metaState() }), let fresh = try? await call.get() else { return cached.state }
        meta.withLockedValue { $0 = (fresh, Date()) }
        return fresh
    }
}

/// Issue 35: the shards this node's replicas feed its edge, polled a loop's worth at a time.
extension NodeEdgeCluster: LocalEventFeeds {
    public func partition(of shard: ShardID) -> Int { raft.partition(of: shard) }

    public func feedsHere(_ shard: ShardID) -> Bool {
        feedRoutes.withLockedValue { $0.nodes[shard] } == raft.nodeID
    }

    public func events(_ cursors: [ShardID: UInt64], partition: Int, waitMillis: Int) async throws
        -> [ShardID: RaftDriver.LocalFeedAnswer] {
        let call = try start { raft.localEvents(cursors, partition: partition, edgeId: edgeId, waitMillis: waitMillis) }
        let answers = try await call.get()
        metrics?.feedPollsBatched.increment()
        return answers
    }

    public func nudge(partition: Int) {
        // Under the stopping flag's lock, as `start` schedules: nothing goes to a Raft loop after `close`.
        closed.withLockedValue { closed in
            if !closed { raft.nudgeLocalFeed(partition: partition, edgeId: edgeId) }
        }
    }
}
