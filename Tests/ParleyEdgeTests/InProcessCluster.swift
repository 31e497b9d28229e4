import Foundation
import NIOCore
import ParleyCluster
import ParleyHost
import ParleyEdge
import ParleyIM
import ParleyRooms
import Synchronization
@testable import ParleyTransport
import ParleyShardState
import ParleyPlacement

/// A whole cluster in one process for the edge tests: every shard is a real `RoomsState` applied with real
/// `ApplyContext`s in log order, its event log is served honestly (cursor nil = the present, long-poll until
/// something is applied or the wait ends), and tokens come from a real `MetaState`. What it leaves out is
/// replication, which the edge cannot see.
final class InProcessCluster: EdgeCluster, Sendable {
    let edgeId: String
    let shardCount: Int
    private let map: ShardMap

    private struct Shard {
        var state: ShardState
        var index: UInt64 = 0
        var log: [ShardEventBatch] = []
        /// Log entries the feed reports lost (`gap: true`) instead of serving: tests of the edge's gap fill.
        var hidden: Set<UInt64> = []
    }

    private struct State {
        var shards: [Shard]
        var meta = MetaState()
        var metaIndex: UInt64 = 0
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        var submitted: [(RoomCommand, CommandActor)] = []
        var imOnLoop = 0
        var hideNext = 0
        /// The next `enter` applies but its caller gets `EdgeClusterError.timedOut` (an outcome lost in
        /// flight, as when the leader changes after committing).
        var loseNextEnterOutcome = false
        /// Issue 18: what `everyNodeHas(.sessionTakeOver)` answers (false: a node of an older version).
        var takeOverReadable = true
        /// Commands for these rooms (cluster ids) wait until released before they apply: a stuck shard.
        var heldRooms: Set<String> = []
        /// The IM relay is held (a relay cut off by a partition): effects wait in their outboxes.
        var relayHeld = false
    }

    private let state: Mutex<State>

    init(edgeId: String = "e1.1000", shardCount: Int = 2, limits: RoomLimits = RoomLimits()) {
        self.edgeId = edgeId
        self.shardCount = shardCount
        map = ShardMap(shardCount: shardCount, replicationFactor: 1)
        state = Mutex(State(shards: (0..<shardCount).map { _ in Shard(state: ShardState(rooms: RoomsState(limits: limits))) }))
    }

    func shard(ofRoom roomId: String) -> ShardID { map.shard(ofRoom: roomId) }

    private static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    func submit(_ request: ShardRequest) async throws -> ShardOutcome {
        switch request.command {
        case .room(let command): return .room(try await applyRoom(command, shard: request.shard, actor: request.actor))
        case .im(let account, let command): return .im(applyIm(command, account: account, shard: request.shard, actor: request.actor))
        case .webhook: throw EdgeClusterError.unavailable("a webhook outbox command is the shard leader's own")
        }
    }

    private func applyRoom(_ command: RoomCommand, shard: ShardID, actor: CommandActor) async throws -> ApplyOutcome {
        if let roomId = command.roomId {
            while state.withLock({ $0.heldRooms.contains(roomId) }) { try await Task.sleep(for: .milliseconds(5)) }
        }
        let (outcome, waiters) = state.withLock { s -> (ApplyOutcome, [CheckedContinuation<Void, Never>]) in
            s.shards[shard].index += 1
            let index = s.shards[shard].index
            let outcome = s.shards[shard].state.apply(
                .room(command), context: ApplyContext(commandIndex: index, timestamp: Self.now, actor: actor)).room!
            s.submitted.append((command, actor))
            if !outcome.events.isEmpty {
                s.shards[shard].log.append(ShardEventBatch(index: index, events: outcome.events))
                if s.hideNext > 0 {
                    s.hideNext -= 1
                    s.shards[shard].hidden.insert(index)
                }
            }
            let waiting = Array(s.waiters.values)
            s.waiters = [:]
            return (outcome, waiting)
        }
        for w in waiters { w.resume() }
        if case .enter = command, state.withLock({ s in defer { s.loseNextEnterOutcome = false }; return s.loseNextEnterOutcome }) {
            throw EdgeClusterError.timedOut
        }
        return outcome
    }

    func shard(ofUser account: String) -> ShardID { map.shard(ofUser: account) }

    func shard(ofTeam teamId: String) -> ShardID { map.shard(ofTeam: teamId) }

    /// Issue 19: an IM command applied to the shard's real `ShardState`; its feed events go into the shard's
    /// event log as a node's would.
    private func applyIm(_ command: ImShardCommand, account: String, shard: ShardID, actor: CommandActor)
        -> Result<ImApplied, ImError> {
        let (result, waiters) = state.withLock { s -> (Result<ImApplied, ImError>, [CheckedContinuation<Void, Never>]) in
            s.shards[shard].index += 1
            let index = s.shards[shard].index
            let outcome = s.shards[shard].state.apply(
                .im(account: account, command), context: ApplyContext(commandIndex: index, timestamp: Self.now, actor: actor))
            let feed = s.shards[shard].state.takeImFeed()
            if !feed.isEmpty { s.shards[shard].log.append(ShardEventBatch(index: index, events: [], im: feed)) }
            Self.relayEffects(&s)
            let waiting = Array(s.waiters.values)
            s.waiters = [:]
            return (outcome.im!, waiting)
        }
        for w in waiters { w.resume() }
        return result
    }

    /// What the shard leaders' relay does on a node (`ImRelay`), at once: every outbox's effects applied on
    /// their targets' shards as `effects` commands, then confirmed on the source.
    private static func relayEffects(_ s: inout State) {
        guard !s.relayHeld else { return }
        for source in s.shards.indices {
            let outbox = s.shards[source].state.im.outbox
            guard !outbox.isEmpty else { continue }
            var byTarget: [ShardID: [OutboxEntry]] = [:]
            for entry in outbox { byTarget[ShardMap(shardCount: s.shards.count, replicationFactor: 1).shard(ofUser: entry.effect.target), default: []].append(entry) }
            for target in byTarget.keys.sorted() {
                s.shards[target].index += 1
                let index = s.shards[target].index
                _ = s.shards[target].state.apply(.im(account: "", .effects(from: source, byTarget[target]!)),
                                                 context: ApplyContext(commandIndex: index, timestamp: now, actor: .appServer))
                let feed = s.shards[target].state.takeImFeed()
                if !feed.isEmpty { s.shards[target].log.append(ShardEventBatch(index: index, events: [], im: feed)) }
            }
            s.shards[source].index += 1
            _ = s.shards[source].state.apply(.im(account: "", .confirm(outbox.map(\.seq))),
                                             context: ApplyContext(commandIndex: s.shards[source].index, timestamp: now, actor: .appServer))
        }
    }

    func events(shard: ShardID, after cursor: UInt64?, waitMillis: Int) async throws -> ShardEventPage {
        let deadline = ContinuousClock.now + .milliseconds(waitMillis)
        while true {
            let page: ShardEventPage? = state.withLock { s in
                let sh = s.shards[shard]
                guard let cursor else {
                    return ShardEventPage(shard: shard, batches: [], cursor: sh.index, gap: false, leader: 1)
                }
                let after = sh.log.filter { $0.index > cursor }
                guard !after.isEmpty else { return nil }
                let gap = after.contains { sh.hidden.contains($0.index) }
                return ShardEventPage(shard: shard, batches: after.filter { !sh.hidden.contains($0.index) },
                                      cursor: after.last!.index, gap: gap, leader: 1)
            }
            if let page { return page }
            if ContinuousClock.now >= deadline || Task.isCancelled {
                return ShardEventPage(shard: shard, batches: [], cursor: cursor ?? 0, gap: false, leader: 1)
            }
            await waitForApply(until: deadline)
        }
    }

    /// Sleeps until the next applied command or the deadline, whichever is first.
    private func waitForApply(until deadline: ContinuousClock.Instant) async {
        let id = UUID()
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            state.withLock { $0.waiters[id] = c }
            Task {
                try? await Task.sleep(until: deadline)
                let w = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                w?.resume()
            }
        }
    }

    func checkToken(appKey: String, account: String, token: String) async -> TokenVerdict {
        state.withLock { $0.meta.checkToken(appKey: appKey, account: account, token: token, now: Self.now,
                                            secrets: Self.secrets) }
    }

    func userExists(appKey: String, account: String) async -> Bool {
        state.withLock { $0.meta.user(appKey: appKey, account: account) != nil }
    }

    func knowsUser(appKey: String, account: String) -> Bool {
        state.withLock { $0.meta.user(appKey: appKey, account: account) != nil }
    }

    /// Issue 35: IM commands the edge submitted from a connection's loop (not the actor).
    var imSubmittedOnLoop: Int { state.withLock { $0.imOnLoop } }

    func submit(_ request: ShardRequest, on loop: any EventLoop) -> EventLoopFuture<ShardOutcome> {
        if case .im = request.command { state.withLock { $0.imOnLoop += 1 } }
        return loop.makeFutureWithTask { try await self.submit(request) }
    }

    func appExists(_ appKey: String) async -> Bool {
        state.withLock { $0.meta.apps[appKey] != nil }
    }

    func roomAddresses(roomId: String) async -> [String] { [] }

    func connectionBudget(ofApp appKey: String) async -> ConnectionBudget? {
        state.withLock { $0.meta.connectionBudgets[appKey] }
    }

    func roomCeiling(ofApp appKey: String) async -> Int? {
        state.withLock { $0.meta.roomCeilings[appKey] }
    }

    // MARK: set-up as the app server would do it

    @discardableResult
    func meta(_ command: MetaCommand) -> MetaOutcome {
        state.withLock { s in
            s.metaIndex += 1
            return s.meta.apply(command, context: ApplyContext(commandIndex: s.metaIndex, timestamp: Self.now,
                                                               actor: .appServer))
        }
    }

    static let secrets = MetaSecrets(clusterSecret: "in-process-cluster")

    func addApp(_ appKey: String) {
        meta(.putApp(Self.secrets.app(appKey, secret: String(repeating: "s", count: 32))))
    }

    func addUser(appKey: String, account: String, token: String, expiresAt: Int64 = 0) {
        meta(.putUser(Self.secrets.user(appKey: appKey, account: account, token: token, tokenExpiresAt: expiresAt)))
    }

    /// E3: the rooms a user holds slots for in a (home) shard's state.
    func slotRooms(of userId: String, shard: ShardID) -> [String] {
        state.withLock { $0.shards[shard].state.rooms.slotRooms(of: userId) }
    }

    func asAppServer(_ command: RoomCommand, room: String) async throws -> ApplyOutcome {
        try await submit(command, shard: shard(ofRoom: room), actor: .appServer)
    }

    func createRoom(_ roomId: String, creator: String = "owner") async throws {
        let outcome = try await asAppServer(.createRoom(CreateRoom(roomId: roomId, creator: creator, name: roomId)),
                                            room: roomId)
        _ = try outcome.result.get()
    }

    /// The next `count` applied entries with events are reported lost by the feed.
    func hideNextEntries(_ count: Int) {
        state.withLock { $0.hideNext = count }
    }

    func loseNextEnterOutcome() {
        state.withLock { $0.loseNextEnterOutcome = true }
    }

    /// Issue 18: as if a node of the cluster ran a version without session take-overs (or again with).
    /// Commands for `roomId` (as the cluster names it) wait until `release(room:)`.
    /// Holds the IM relay (effects wait), or lets it go on (what waited is relayed with the next command).
    func holdRelay(_ held: Bool) { state.withLock { $0.relayHeld = held } }

    func hold(room roomId: String) { state.withLock { _ = $0.heldRooms.insert(roomId) } }
    func release(room roomId: String) { state.withLock { _ = $0.heldRooms.remove(roomId) } }

    func setTakeOverReadable(_ readable: Bool) { state.withLock { $0.takeOverReadable = readable } }

    func everyNodeHas(_ feature: PeerProtocol.Feature) async -> Bool { state.withLock { $0.takeOverReadable } }

    /// Every command submitted so far, with its actor (tests check what the edge asked for).
    var submitted: [(RoomCommand, CommandActor)] { state.withLock { $0.submitted } }
}
