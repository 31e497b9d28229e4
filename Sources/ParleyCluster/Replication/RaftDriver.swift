import Foundation
import NIOCore
import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyTransport
import ParleyRaftWire
import ParleyShardState
import ParleyPlacement

/// Runs one of a node's `RaftHost`s (its loop's partition of the groups, `RaftLoops`) on one event loop:
/// ticks it on a timer, feeds it peers' batches, runs its ready loop whenever there is work, and routes
/// commands to shard leaders (here or on another node), retrying when leadership moves. Everything that
/// touches the host happens on `loop`.
public final class RaftDriver: @unchecked Sendable {
    public let loop: EventLoop
    let host: RaftHost
    let transport: PeerTransport
    let feeds: EdgeFeedBoard
    /// Between `start` and `stop` (or a storage failure): the duties run only then.
    private(set) var driving = false
    let leaderBalance: LeaderBalanceSettings
    let moves: ReplicaMoveSettings
    /// Caps the snapshot bytes this node sends per second (issue 17).
    let snapshots: SnapshotPacer
    /// A balance round is gathering views (rounds never overlap).
    var balancing = false
    /// The planner is asking whether removed nodes can be dropped (`dropMovedOffNodes`).
    var checkingDrops = false
    /// This node's state in the registry as the last placement look saw it (`handOffLeaderships`).
    var registryState: NodeRecord.State?
    /// The meta state as last fetched from a meta replica (on a node that holds none).
    var fetchedMeta: MetaState?
    private let tickInterval: TimeAmount
    private var tickTask: RepeatedTask?
    private var readyScheduled = false
    /// Issue 35: set while a commit index waits for an append to carry it (`RaftHost.oldestCommitNotice`).
    private var commitNoticeTimer: Scheduled<Void>?
    private var deferredWriteScheduled = false
    /// Set when the ready loop fails (the disk): the node stops taking part rather than risk safety.
    private var fatal: Error?
    /// A1: clients' message budgets on the shards this node leads.
    let throttle = SendThrottle()
    /// Messages refused over budget here (for /metrics).
    public private(set) var sendsOverBudget = 0
    /// Issue 19: the IM effects this node's shard leaders are relaying.
    let relay = ImRelayBook()
    /// The node's drivers, one per Raft loop (issue 35), for what another loop's groups answer; set by
    /// `RaftLoops` before the driver starts.
    weak var loops: RaftLoops?
    /// The groups this driver's host holds of the node's.
    let partition: HostPartition
    /// SPEC W3: where a client's message in a room its app checks is shown to the app server first.
    var preSend: (any PreSendGate)?
    /// SPEC W2: where this driver's shard leaders send their apps' after-event copies.
    var webhookCopies: (any WebhookCopyPoster)?
    /// What those copies are doing.
    let webhookBook = WebhookCopyBook()
    /// W4: copies older than this are dropped unsent (counted): an hour by default.
    public var webhookCopyMaxAgeMillis: Int64 = 3_600_000
    /// SPEC D1: whether every node reads `setHistoryWindow`, and the shards with one in flight.
    let windowReaders = PeerFeatureWatch(.historyWindow)
    var settingWindow: Set<ShardID> = []
    /// Issue 38 item 5: the same for the IM logs' windows (`setLogWindow`).
    let imWindowReaders = PeerFeatureWatch(.imLogWindow)
    var settingImWindow: Set<ShardID> = []

    /// Builds the host on `loop`.
    public init(loop: EventLoop, transport: PeerTransport, tickInterval: TimeAmount,
                leaderBalance: LeaderBalanceSettings = LeaderBalanceSettings(),
                moves: ReplicaMoveSettings = ReplicaMoveSettings(),
                makeHost: (_ send: @escaping (NodeID, [RaftEnvelope]) -> Void) throws -> RaftHost,
                edgeLeaseMillis: Int64 = 6_000) throws {
        self.loop = loop
        self.leaderBalance = leaderBalance
        self.moves = moves
        feeds = EdgeFeedBoard(leaseMillis: edgeLeaseMillis, takeoverMillis: Self.pollCallTimeoutMillis)
        self.transport = transport
        self.tickInterval = tickInterval
        let pacer = SnapshotPacer(bytesPerSecond: moves.snapshotBytesPerSecond, loop: loop) { peer, batch in
            transport.send(to: peer, batch)
        }
        host = try makeHost { peer, batch in pacer.send(peer, batch) }
        partition = host.config.partition
        host.historyPages.loop = loop
        pacer.sentBytes = host.metrics.snapshotBytesSent
        snapshots = pacer
        host.answered = { transport.flushAnswers(on: loop) }
    }

    public var nodeID: NodeID { host.config.nodeID }
    public var shardMap: ShardMap { host.config.shardMap }

    /// The driver of `shard`'s loop when that is not this one (issue 35): what reaches this driver about
    /// another loop's shard is handed there, and its answer comes back to this loop.
    func elsewhere(_ shard: ShardID) -> RaftDriver? {
        guard partition.count > 1, !partition.holds(shard: shard), (0..<shardMap.shardCount).contains(shard) else {
            return nil
        }
        return loops?.driver(for: shard)
    }

    /// The first loop's driver, which holds the meta group, when this is another.
    var metaDriver: RaftDriver? { partition.holdsMeta ? nil : loops?.drivers.first }

    public func start() {
        loop.execute {
            self.tickTask = self.loop.scheduleRepeatedTask(initialDelay: self.tickInterval, delay: self.tickInterval) { _ in
                self.host.tick()
                self.runReady()
                self.endPolls()
            }
            self.driving = true
            self.runReady()
        }
    }

    public func stop() -> EventLoopFuture<Void> {
        loop.submit {
            self.stopDriving()
            // Neither is needed for safety (a restart applies the entries again, the leader resends the
            // commit index), but a restart is cheaper with them.
            try? self.host.writeCarried()
            // The rows are handed to the history store's own thread: wait for them, or a process that exits
            // right after stopping leaves its history behind its log (rebuilt on the next start, but the
            // stopped node's store is what an operator and the chaos checker read).
            try? self.host.flushHistory(waitingForTheDisk: true)
        }
    }

    /// A batch from a peer.
    public func receive(from peer: NodeID, _ batch: [RaftEnvelope]) {
        loop.execute {
            self.host.receive(batch)
            self.scheduleReady()
        }
    }

    /// The connection to a peer broke: quiet groups wake up so a dead leader is replaced.
    public func peerUnreachable(_ peer: NodeID) {
        loop.execute {
            self.host.peerUnreachable(peer)
            self.scheduleReady()
        }
    }

    public func peerReachable(_ peer: NodeID) {
        loop.execute {
            self.host.peerReachable(peer)
            self.scheduleReady()
        }
    }

    func scheduleReady() {
        guard !readyScheduled else { return }
        readyScheduled = true
        loop.execute {
            self.readyScheduled = false
            self.runReady()
        }
    }

    private func runReady() {
        guard fatal == nil else { return }
        do {
            if try host.processReady() > 0 {
                wakePolls()
                scheduleReady()
            }
            // A cycle sends the commit indexes that waited long enough with its other messages (under load the
            // loop runs cycles all the time); the timer makes one for a loop gone quiet.
            if commitNoticeTimer == nil, let oldest = host.oldestCommitNotice { armCommitNotices(after: oldest) }
            if host.deferredWritesDue && !deferredWriteScheduled {
                deferredWriteScheduled = true
                loop.execute {
                    self.deferredWriteScheduled = false
                    guard self.fatal == nil else { return }
                    do { try self.host.writeDeferred() } catch { self.stopAfter(error) }
                }
            }
        } catch {
            stopAfter(error)
        }
    }

    /// At `since` + `commitNoticeMillis`, runs a cycle, which sends the commit indexes that waited that long
    /// (and arms this again for the next, if any).
    private func armCommitNotices(after since: ContinuousClock.Instant) {
        let left = max(.zero, since + .milliseconds(host.config.commitNoticeMillis) - .now)
        commitNoticeTimer = loop.scheduleTask(in: .nanoseconds(Int64(left / .nanoseconds(1)))) {
            self.commitNoticeTimer = nil
            guard self.driving else { return }
            self.runReady()
        }
    }

    /// A storage failure: the node stops driving Raft rather than go on with state it could not write.
    private func stopAfter(_ error: Error) {
        fatal = error
        stopDriving()
    }

    /// No more ticks, so no more polls parked here: the waiting ones are answered now.
    private func stopDriving() {
        tickTask?.cancel()
        tickTask = nil
        commitNoticeTimer?.cancel()
        commitNoticeTimer = nil
        driving = false
        endPolls(now: .distantFuture)
    }

    /// The driver's periodic work besides the tick (issue 34): the node runs each as a service of its one
    /// `ServiceGroup`; a duty's `run` does its work on the driver's loop, and nothing once the driver stopped.
    public var duties: [DriverDuty] {
        var duties = [
            duty("edge leases", every: .seconds(1)) {
                $0.expireSilentEdges()
                $0.carryLeases()
                $0.throttle.dropIdle(now: Self.now())
            },
            // N5: durable history older than the retention window goes once a minute.
            duty("history expiry", after: .seconds(5), every: .seconds(60)) { _ = try? $0.host.expireHistory(now: Self.now()) },
            // Issue 19: what this node's IM shard leaders owe other shards (a message's copy for its receiver,
            // a friend request's other side) goes out at the tick's pace; a shard with a batch in flight waits.
            duty("IM relay", every: tickInterval) { $0.relayEffects() },
            // SPEC W2: the apps' after-event copies go out from each shard's leader at the tick's pace.
            duty("webhook copies", every: tickInterval) { $0.deliverWebhookCopies() },
            // SPEC D1: each shard led here holds its rooms' windows within the node's byte setting.
            duty("history windows", every: .seconds(1)) { $0.settleHistoryWindows() },
        ]
        if leaderBalance.intervalMillis > 0 && leaderBalance.transfersPerRound > 0 {
            duties.append(duty("leader balance", every: .milliseconds(leaderBalance.intervalMillis)) { $0.balanceLeaders() })
        }
        if moves.intervalMillis > 0 {
            duties.append(duty("placement", every: .milliseconds(moves.intervalMillis)) { $0.tendPlacement() })
        }
        return duties
    }

    private func duty(_ name: String, after delay: TimeAmount? = nil, every period: TimeAmount,
                      _ work: @escaping @Sendable (RaftDriver) -> Void) -> DriverDuty {
        DriverDuty(name: name, initialDelay: delay ?? period, period: period) {
            self.loop.submit { if self.driving { work(self) } }
        }
    }

    // MARK: Commands

    /// Applies a command on the shard that holds `roomID`, wherever its leader is; retries while
    /// leadership moves, until `deadline`.
    public func submit(_ command: RoomCommand, roomID: String, actor: CommandActor,
                       deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<ApplyOutcome> {
        submit(command, shard: shardMap.shard(ofRoom: roomID), actor: actor, deadline: deadline)
    }

    /// `requestKey`: the server-API request the command belongs to (SPEC A7): the shard refuses it with
    /// 10406 if that request applied already, whichever node it came through.
    public func submit(_ command: RoomCommand, shard: ShardID, actor: CommandActor, requestKey: RequestKey? = nil,
                       deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<ApplyOutcome> {
        if let other = elsewhere(shard) {
            return other.submit(command, shard: shard, actor: actor, requestKey: requestKey, deadline: deadline).hop(to: loop)
        }
        let request = ForwardedCommand(shard: shard, actor: actor, command: command, requestKey: requestKey)
        // Peers' calls mostly arrive on this loop (the transport runs on the Raft loops): no task to hop over.
        if loop.inEventLoop { return attempt(request, deadline) }
        return loop.flatSubmit { self.attempt(request, deadline) }
    }

    /// How to reach a group's leader: propose on the local replica, or forward to a node with `path`
    /// (an RPC that proposes there only, so a command makes at most one more hop).
    // Built and used on the driver's loop only.
    struct GroupRoute<Outcome: BinaryCodable & Sendable & Hashable>: @unchecked Sendable {
        var what: String
        var path: String
        var body: [UInt8]
        /// The nodes that hold the group, asked in turn when this node holds none.
        var replicas: [NodeID]
        var here: (() -> EventLoopFuture<GroupAnswer<Outcome>>)?
    }

    /// `firstAnswer`: what a proposal already made here answered (`attempt`'s direct path), taken as this
    /// attempt's answer.
    func route<Outcome>(_ r: GroupRoute<Outcome>, _ deadline: NIODeadline, attempt: Int = 0,
                                firstAnswer: GroupAnswer<Outcome>? = nil) -> EventLoopFuture<Outcome> {
        let first: EventLoopFuture<GroupAnswer<Outcome>>
        if let firstAnswer {
            first = loop.makeSucceededFuture(firstAnswer)
        } else if let here = r.here {
            first = here()
        } else if !r.replicas.isEmpty {
            first = forward(r, to: r.replicas[attempt % r.replicas.count])
        } else {
            first = loop.makeSucceededFuture(.unavailable("no replica of \(r.what)"))
        }
        return first.flatMap { answer -> EventLoopFuture<Outcome> in
            switch answer {
            case .applied(let outcome):
                return self.loop.makeSucceededFuture(outcome)
            case .outcomeUnknown:
                // Retrying could apply the command twice: the caller decides (a resend with the same
                // clientMessageId is de-duplicated by the room).
                return self.loop.makeFailedFuture(RouteError.outcomeUnknown)
            case .notLeader(let leader) where leader != 0 && leader != self.nodeID:
                let promise = self.loop.makePromise(of: Outcome.self)
                self.callLeader(leader, path: r.path, body: r.body, promise) { self.retry(r, deadline, attempt, after: $0) }
                return promise.futureResult
            default:
                return self.retry(r, deadline, attempt, after: "\(answer)")
            }
        }.flatMapError { error in
            if let e = error as? RouteError, !e.isPeerRefusal { return self.loop.makeFailedFuture(e) }
            return self.retry(r, deadline, attempt, after: "\(error)")
        }
    }

    private func retry<Outcome>(_ r: GroupRoute<Outcome>, _ deadline: NIODeadline, _ attempt: Int, after last: String)
        -> EventLoopFuture<Outcome> {
        // 5, 10, 20, 40, then 50 ms: a leadership transfer (a move, the balancer) refuses proposals for a few
        // milliseconds, and a flat 50 ms wait made every command caught in one 50 ms slower.
        let pause = TimeAmount.milliseconds(min(50, 5 << min(attempt, 4)))
        guard NIODeadline.now() + pause < deadline else {
            return loop.makeFailedFuture(RouteError.noLeader(what: r.what, last: last))
        }
        return loop.scheduleTask(in: pause) {}.futureResult.flatMap { self.route(r, deadline, attempt: attempt + 1) }
    }

    private func forward<Outcome>(_ r: GroupRoute<Outcome>, to node: NodeID) -> EventLoopFuture<GroupAnswer<Outcome>> {
        transport.call(node, path: r.path, body: r.body).hop(to: loop).flatMapThrowing { response in
            guard let answer = GroupAnswer<Outcome>(response: response) else { throw RouteError.peerRefused(response.status) }
            return answer
        }
    }

    private func attempt(_ request: ForwardedCommand, _ deadline: NIODeadline) -> EventLoopFuture<ApplyOutcome> {
        // A replica here is asked first on every try, so a node that becomes the leader while a command waits
        // proposes it itself (a budgeted command it does not lead is answered notLeader with the hint, and the
        // route goes there: A1, the leader's driver checks the budget).
        guard let known = host.leader(of: request.shard) else { return route(commandRoute(request, held: false), deadline) }
        // The common cases, a replica here that knows its leader: one promise answered from the proposal's
        // completion, or from the leader's answer to one call, instead of the route's chain of futures (a tenth
        // of a node's CPU at 1000 clients; session 40: the chain cost a fifth of the writes/s once writes
        // entering at a follower went to the leader by call). Anything but an outcome continues as `route`
        // continues from a first answer.
        let promise = loop.makePromise(of: ApplyOutcome.self)
        if !request.isRead, known != nodeID, known != 0 {
            // The route's `notLeader` step, taken at once: the route itself is built only for a retry.
            callLeader(known, path: Self.proposePath, body: request.encoded(), promise) {
                self.retry(self.commandRoute(request, held: true), deadline, 0, after: $0)
            }
            return promise.futureResult
        }
        proposeHere(request) { result in
            if case .success(let outcome) = result { return promise.succeed(outcome) }
            promise.completeWith(self.route(self.commandRoute(request, held: true), deadline,
                                            firstAnswer: Self.answer(result)))
        }
        return promise.futureResult
    }

    /// Sends a command to the leader a replica named, in one call answered into `promise`: an outcome ends the
    /// route, as does `outcomeUnknown` (it may have applied: never sent twice); anything else — a refusal,
    /// another leader, a link down — is handed to `again` with why (the route's retry).
    private func callLeader<Outcome>(_ leader: NodeID, path: String, body: [UInt8], _ promise: EventLoopPromise<Outcome>,
                                     again: @escaping @Sendable (String) -> EventLoopFuture<Outcome>)
        where Outcome: BinaryCodable & Sendable & Hashable {
        transport.call(leader, path: path, body: body).hop(to: loop).whenComplete { result in
            let why: String
            switch result {
            case .success(let response):
                switch GroupAnswer<Outcome>(response: response) {
                case .applied(let outcome)?: return promise.succeed(outcome)
                case .outcomeUnknown?: return promise.fail(RouteError.outcomeUnknown)
                case let answer?: why = "\(answer)"
                case nil: why = "\(RouteError.peerRefused(response.status))"
                }
            case .failure(let error):
                why = "\(error)"
            }
            promise.completeWith(again(why))
        }
    }

    private func commandRoute(_ request: ForwardedCommand, held: Bool) -> GroupRoute<ApplyOutcome> {
        GroupRoute<ApplyOutcome>(
            what: "shard \(request.shard)", path: "/rpc/v1/propose", body: request.encoded(),
            replicas: host.replicaNodes(of: request.shard),
            here: held ? { self.proposeHere(request) } : nil)
    }

    /// Applies a change to the meta group wherever its leader is.
    public func submitMeta(_ command: MetaCommand, requestKey: RequestKey? = nil,
                           deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<MetaOutcome> {
        if let first = metaDriver {
            return first.submitMeta(command, requestKey: requestKey, deadline: deadline).hop(to: loop)
        }
        let request = ForwardedMetaCommand(command: command, requestKey: requestKey)
        return loop.flatSubmit {
            self.route(GroupRoute<MetaOutcome>(
                what: "the meta group", path: "/rpc/v1/meta/propose", body: request.encoded(),
                replicas: self.metaCandidates(),
                here: self.host.metaLeader != nil ? { self.proposeMetaHere(request) } : nil), deadline)
            .flatMap { outcome in
                // Answered by the leader: this node's replica catches up first (read your writes).
                let caughtUp = self.loop.makePromise(of: MetaOutcome.self)
                self.host.catchUpMeta { caughtUp.succeed(outcome) }
                self.scheduleReady()
                return caughtUp.futureResult
            }
        }
    }

    /// Proposes on this node's replica; answers `notLeader` with a hint when it is not the leader.
    func proposeHere(_ request: ForwardedCommand) -> EventLoopFuture<ForwardedAnswer> {
        let promise = loop.makePromise(of: ForwardedAnswer.self)
        proposeHere(request) { promise.succeed(Self.answer($0)) }
        return promise.futureResult
    }

    /// Proposes on this node's replica, stamped with this node's clock, and runs the ready loop soon.
    private func proposeHere(_ request: ForwardedCommand,
                             then completion: @escaping ProposalCompletion) {
        loop.preconditionInEventLoop()
        if !request.isRead, let leader = leaderElsewhere(of: request.shard) {
            return completion(.failure(.notLeader(leader: leader)))
        }
        if case .sendMessage(let m) = request.command, case .session(let sender) = request.actor {
            let budget = request.isBudgeted ? host.sendBudget(shard: request.shard, roomId: m.roomId) : SendBudget.unlimited
            let gate = preSend.flatMap { $0.checkMillis(roomId: m.roomId) != nil ? $0 : nil }
            if !budget.isUnlimited,
               let wait = throttle.admit(roomId: m.roomId, userId: sender.userId, budget: budget, now: Self.now()) {
                sendsOverBudget += 1
                host.countOverBudget(request.command)
                return completion(.success(ApplyOutcome(result: .failure(.sendRateLimited(retryAfterMillis: wait)), events: [])))
            }
            if let gate, let verdict = gate.verdict(on: m, sender: sender, eventLoop: loop) {
                whenChecked(verdict) { v in
                    if let refusal = v.refusal { return completion(.success(ApplyOutcome(result: .failure(refusal), events: []))) }
                    self.host.propose(.sendMessage(v.applied(to: m)), shard: request.shard, actor: request.actor,
                                      timestamp: Self.now(), requestKey: request.requestKey, completion: completion)
                    self.scheduleReady()
                }
                return
            }
        }
        host.propose(request.command, shard: request.shard, actor: request.actor, timestamp: Self.now(),
                     requestKey: request.requestKey, completion: completion)
        scheduleReady()
    }

    /// One road for writes (issue 34), rooms and IM alike: only the shard's leader appends one. A follower —
    /// reached by a node with no replica, which asks replicas in ranked order, by one whose replica knew no
    /// leader, or by its own node — answers with the leader it knows (0: none), and the caller goes there by
    /// call. So the leader's checks see every write (A1's budget, W3's pre-send check: only the leader asks the
    /// app server, once the budget is charged), and the answer comes from the leader's apply: a write passed on
    /// inside Raft was answered when this follower applied it, after it learned the commit — up to
    /// `--commit-notice-ms` later on a quiet shard (session 39: 2.9 ms p50 at one client in
    /// `replicate-vs-etcd.sh`). A read is not asked this: a follower answers it after a read index. Nil when this
    /// node's replica leads.
    func leaderElsewhere(of shard: ShardID) -> NodeID? {
        host.isLeader(of: shard) ? nil : host.leader(of: shard) ?? 0
    }

    /// W3: `then` runs on this loop with the app's verdict; a check that failed outright reads as unchecked.
    /// Only this message waits: the loop goes on meanwhile.
    func whenChecked(_ verdict: EventLoopFuture<PreSendVerdict>, then: @escaping (PreSendVerdict) -> Void) {
        verdict.hop(to: loop).whenComplete { then((try? $0.get()) ?? .unchecked(why: "the check failed")) }
    }

    func proposeMetaHere(_ request: ForwardedMetaCommand) -> EventLoopFuture<GroupAnswer<MetaOutcome>> {
        loop.preconditionInEventLoop()
        let promise = loop.makePromise(of: GroupAnswer<MetaOutcome>.self)
        host.proposeMeta(request.command, timestamp: Self.now(), requestKey: request.requestKey) { promise.succeed(Self.answer($0)) }
        scheduleReady()
        return promise.futureResult
    }

    static func answer<O>(_ result: Result<O, ClusterError>) -> GroupAnswer<O> {
        switch result {
        case .success(let outcome): .applied(outcome)
        case .failure(.notLeader(let leader)): .notLeader(leader)
        case .failure(.shardNotHere), .failure(.metaNotHere): .notLeader(0)
        case .failure(.outcomeUnknown): .outcomeUnknown
        case .failure(let error): .unavailable("\(error)")
        }
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Every RPC the driver serves, by path, from the lists each concern keeps (`RaftLoops.handle` finds a
    /// request's call and its loop here); a path listed twice stops the node at start (`PeerCall.table`).
    static let peerCalls = PeerCall.table(commandCalls + feedCalls + imCalls + balanceCalls + membershipCalls + drainCalls)

    static let proposePath = "/rpc/v1/propose"
    static let submitPath = "/rpc/v1/submit"
    static let leaderPath = "/rpc/v1/leader"
    static let metaProposePath = "/rpc/v1/meta/propose"
    static let metaStatePath = "/rpc/v1/meta/state"

    /// The commands' calls:
    /// - `propose` and `meta/propose` (node to node): propose on this replica only, never forward again (one
    ///   hop);
    /// - `submit` (tools): route a room command to its shard leader wherever it is;
    /// - `leader`: the leader this node knows for a shard;
    /// - `meta/state`: this node's copy of the meta state (for nodes that hold no meta replica).
    static let commandCalls: [PeerCall] = [
        PeerCall(path: proposePath, shard: PeerCall.leadingShard) { driver, request in
            guard let command = driver.shardCommand(request.body) else { return driver.refuse(400, "undecodable command") }
            // One promise, answered from the proposal's completion (every write entering at a follower comes
            // this way: no task and no mapped futures per call).
            let promise = driver.loop.makePromise(of: PeerResponse.self)
            let version = request.version
            let propose: @Sendable () -> Void = {
                driver.proposeHere(command) { promise.succeed(PeerResponse(status: 200, body: RaftDriver.answer($0).encoded(forCaller: version))) }
            }
            if driver.loop.inEventLoop { propose() } else { driver.loop.execute(propose) }
            return promise.futureResult
        },
        PeerCall(path: submitPath, shard: PeerCall.leadingShard) { driver, request in
            guard let command = driver.shardCommand(request.body) else { return driver.refuse(400, "undecodable command") }
            let submitted = driver.submit(command.command, shard: command.shard, actor: command.actor, requestKey: command.requestKey)
            let promise = submitted.eventLoop.makePromise(of: PeerResponse.self)
            let version = request.version
            submitted.whenComplete { result in
                let answer: ForwardedAnswer
                switch result {
                case .success(let outcome): answer = .applied(outcome)
                case .failure(let error): answer = error as? RouteError == .outcomeUnknown ? .outcomeUnknown : .unavailable("\(error)")
                }
                promise.succeed(PeerResponse(status: 200, body: answer.encoded(forCaller: version)))
            }
            return promise.futureResult
        },
        PeerCall(path: leaderPath, shard: PeerCall.leadingShard) { driver, request in
            var r = ByteReader(request.body)
            guard let shard = try? r.readInt(), r.isAtEnd else { return driver.refuse(400, "bad shard") }
            return driver.loop.submit {
                var w = ByteWriter()
                w.write(driver.host.leader(of: shard) ?? 0)
                return PeerResponse(status: 200, body: w.bytes)
            }
        },
        PeerCall(path: metaProposePath) { driver, request in
            guard let command = try? ForwardedMetaCommand(decoding: request.body) else {
                return driver.refuse(400, "undecodable meta command")
            }
            return driver.loop.flatSubmit { driver.proposeMetaHere(command) }.map { PeerResponse(status: 200, body: $0.encoded()) }
        },
        PeerCall(path: metaStatePath) { driver, _ in
            driver.loop.submit {
                guard let state = driver.host.metaState else { return PeerResponse(status: 404, body: []) }
                return PeerResponse(status: 200, body: state.snapshot())
            }
        },
    ]

    private func shardCommand(_ body: [UInt8]) -> ForwardedCommand? {
        guard let command = try? ForwardedCommand(decoding: body), (0..<shardMap.shardCount).contains(command.shard) else {
            return nil
        }
        return command
    }

    /// A call refused before any work, with a sentence for the operator.
    func refuse(_ status: Int, _ text: String) -> EventLoopFuture<PeerResponse> {
        loop.makeSucceededFuture(PeerResponse.text(status, text))
    }

    // MARK: Observation

    public func status() -> EventLoopFuture<[RaftHost.ShardStatus]> {
        loop.submit { self.host.status() }
    }

    /// A digest of each shard's rooms state, to compare replicas.
    public func stateDigests() -> EventLoopFuture<[ShardID: UInt64]> {
        loop.submit {
            var out: [ShardID: UInt64] = [:]
            for shard in self.host.shards {
                out[shard] = StableHash.mix(StableDigest.of(self.host.roomsSnapshot(shard: shard)!))
            }
            return out
        }
    }

    public var failure: Error? { fatal }
}

public enum RouteError: Error, Equatable {
    case noLeader(what: String, last: String)
    case peerRefused(Int)
    /// Leadership moved while the command was in flight: it may or may not have applied.
    case outcomeUnknown

    var isPeerRefusal: Bool {
        if case .peerRefused = self { return true }
        return false
    }
}
