import ParleyHost
import Foundation
import NIOCore
import ParleyIM
import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyTransport
import ParleyShardState
import ParleyPlacement

/// Issue 34: the one road into a shard. Every command — a room's or an IM one, from this node's edge, the
/// server API, the relay or a peer's call — goes as a `ShardRequest` to the shard's leader: this node's
/// replica when it leads, else by call to the leader it names (a node with no replica calls the leader last
/// named to it, else asks the shard's replicas in ranked order), retrying while leadership moves. Only the leader appends a write, after its
/// checks (`admit`); a read is answered by any current replica after a read index. The meta group's commands
/// take the same route to the meta leader. The RPCs that carry them are listed here too (`commandCalls`).
extension RaftDriver {
    /// The one road into a shard (issue 34), for rooms and IM, the edge's commands, the server API's and the
    /// relay's alike: to the shard's leader wherever it is — this node's replica when it leads, else by call —
    /// retrying while leadership moves, until `deadline`. The leader checks it before it appends (A1, W3:
    /// `proposeHere`). An IM command that needs other shards first (a team join's caps, a user's
    /// conversations) asks them here, so no road skips that either. The request's key (SPEC A7): the shard
    /// refuses the command with 10406 if that server-API request applied already, whichever node it came
    /// through. The caller reads the outcome as its command's (`ShardOutcome.roomAnswer`, `.imAnswer`).
    public func submit(_ request: ShardRequest, deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<ShardOutcome> {
        if let composed = composedIm(request, deadline) { return composed }
        return reachShard(request, deadline)
    }

    /// `submit`'s road without the IM compositions: on the driver of the request's shard, to its leader.
    func reachShard(_ request: ShardRequest, _ deadline: NIODeadline) -> EventLoopFuture<ShardOutcome> {
        if let other = elsewhere(request.shard) { return other.reachShard(request, deadline).hop(to: loop) }
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
        /// Told the leader a replica named, for a shard this node holds no replica of (`ShardLeaders`): the
        /// next command goes straight there, not through a follower again.
        var learned: ((NodeID) -> Void)? = nil
        /// A shard's route (nil: the meta group's): a call to a node that went silent gives way once this
        /// node knows another leader of the shard (`givesWay`).
        var shard: ShardID? = nil
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
                r.learned?(leader)
                let promise = self.loop.makePromise(of: Outcome.self)
                self.callLeader(leader, path: r.path, body: r.body, shard: r.shard, promise) {
                    self.retry(r, deadline, attempt, after: $0)
                }
                return promise.futureResult
            default:
                return self.retry(r, deadline, attempt, after: "\(answer)")
            }
        }.flatMapError { error in
            if let e = error as? RouteError, !e.isPeerRefusal { return self.loop.makeFailedFuture(e) }
            return self.retry(r, deadline, attempt, after: "\(error)")
        }
    }

    fileprivate func retry<Outcome>(_ r: GroupRoute<Outcome>, _ deadline: NIODeadline, _ attempt: Int, after last: String)
        -> EventLoopFuture<Outcome> {
        // 5, 10, 20, 40, then 50 ms: a leadership transfer (a move, the balancer) refuses proposals for a few
        // milliseconds, and a flat 50 ms wait made every command caught in one 50 ms slower.
        let pause = TimeAmount.milliseconds(min(50, 5 << min(attempt, 4)))
        guard NIODeadline.now() + pause < deadline else {
            return loop.makeFailedFuture(RouteError.noLeader(what: r.what, last: last))
        }
        return loop.scheduleTask(in: pause) {}.futureResult.flatMap { self.route(r, deadline, attempt: attempt + 1) }
    }

    fileprivate func forward<Outcome>(_ r: GroupRoute<Outcome>, to node: NodeID) -> EventLoopFuture<GroupAnswer<Outcome>> {
        transport.call(node, path: r.path, body: r.body, givesWay: givesWay(node, r.shard)).hop(to: loop).flatMapThrowing { response in
            guard let answer = GroupAnswer<Outcome>(response: response) else { throw RouteError.peerRefused(response.status) }
            return answer
        }
    }

    fileprivate func attempt(_ request: ShardRequest, _ deadline: NIODeadline) -> EventLoopFuture<ShardOutcome> {
        // A replica here is asked first on every try, so a node that becomes the leader while a command waits
        // proposes it itself (a write it does not lead is answered notLeader with the hint, and the route goes
        // there: the leader's driver checks it, A1). A node with no replica of the shard calls the leader last
        // named to it (a replica's `notLeader`, or the shard's feed: `ShardLeaders`), a read too; asking the
        // first-ranked replica instead — a follower as often as not — cost every such command a second hop
        // and the follower's refusal (session 46). Without a name, the ranked route.
        let here = host.leader(of: request.shard)
        let held = here != nil
        let known = here ?? loops?.leaders.leader(of: request.shard) ?? 0
        // The common cases: one promise answered from the proposal's completion, or from the leader's answer to
        // one call, instead of the route's chain of futures (a tenth of a node's CPU at 1000 clients; session
        // 40: the chain cost a fifth of the writes/s once writes entering at a follower went to the leader by
        // call). Anything but an outcome continues as `route` continues from a first answer; a stale name
        // takes the route from its start.
        if !(request.isRead && held), known != nodeID, known != 0 {
            // The route's `notLeader` step, taken at once: the route itself is built only for a retry.
            let promise = loop.makePromise(of: ShardOutcome.self)
            let call = peerCall(request)
            callLeader(known, path: call.path, body: call.body, shard: request.shard, promise) {
                self.retry(self.shardRoute(request, held: held), deadline, 0, after: $0)
            }
            return promise.futureResult
        }
        guard held else { return route(shardRoute(request, held: false), deadline) }
        let promise = loop.makePromise(of: ShardOutcome.self)
        proposeHere(request) { result in
            if case .success(let outcome) = result { return promise.succeed(outcome) }
            promise.completeWith(self.route(self.shardRoute(request, held: true), deadline,
                                            firstAnswer: Self.answer(result)))
        }
        return promise.futureResult
    }

    /// Sends a command to the leader a replica named, in one call answered into `promise`: an outcome ends the
    /// route, as does `outcomeUnknown` (it may have applied: never sent twice); anything else — a refusal,
    /// another leader, a link down — is handed to `again` with why (the route's retry).
    fileprivate func callLeader<Outcome>(_ leader: NodeID, path: String, body: [UInt8], shard: ShardID?,
                                         _ promise: EventLoopPromise<Outcome>,
                                         again: @escaping @Sendable (String) -> EventLoopFuture<Outcome>)
        where Outcome: BinaryCodable & Sendable & Hashable {
        transport.call(leader, path: path, body: body, givesWay: givesWay(leader, shard)).hop(to: loop).whenComplete { result in
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

    /// `ShardLeaders.givesWay` for a call to `node` of `shard`'s command; nil for the meta group.
    private func givesWay(_ node: NodeID, _ shard: ShardID?) -> (@Sendable () -> Bool)? {
        shard.flatMap { loops?.leaders.givesWay(from: node, of: $0) }
    }

    fileprivate func shardRoute(_ request: ShardRequest, held: Bool) -> GroupRoute<ShardOutcome> {
        let call = peerCall(request)
        let shard = request.shard
        return GroupRoute<ShardOutcome>(
            what: "shard \(shard)", path: call.path, body: call.body,
            replicas: host.replicaNodes(of: shard),
            here: held ? { self.proposeHere(request) } : nil,
            learned: held ? nil : { leader in self.loops?.leaders.learned(leader, of: shard) }, shard: shard)
    }

    /// The call that carries `request` to another node: `/rpc/v1/propose` with the request, or for an IM
    /// command while a node older than peer protocol 16 runs, `/rpc/v1/im/propose` in that call's form. The
    /// answer reads alike from both.
    func peerCall(_ request: ShardRequest) -> (path: String, body: [UInt8]) {
        if !shardRequestReaders.everyNode, let legacy = request.legacyImBody() { return (Self.imProposePath, legacy) }
        return (Self.proposePath, request.encoded())
    }

    /// Applies a change to the meta group wherever its leader is.
    public func submitMeta(_ command: MetaCommand, requestKey: RequestKey? = nil,
                           deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<MetaOutcome> {
        if let first = metaDriver {
            return first.submitMeta(command, requestKey: requestKey, deadline: deadline).hop(to: loop)
        }
        let request = MetaRequest.meta(command, requestKey: requestKey)
        return loop.flatSubmit {
            // Issue 34: in the shards' form once every node reads it there, else in the older call's.
            let call = self.requestEntryReaders.everyNode ? (Self.metaRequestPath, request.encoded())
                : (Self.metaProposePath, request.legacyMetaBody())
            return self.route(GroupRoute<MetaOutcome>(
                what: "the meta group", path: call.0, body: call.1,
                replicas: self.metaCandidates(),
                here: self.host.metaLeader != nil ? { self.proposeMetaHere(request) } : nil), deadline)
            .flatMap { outcome in
                // Answered by the leader: this node's replica catches up first (read your writes).
                let caughtUp = self.loop.makePromise(of: MetaOutcome.self)
                self.host.catchUpMeta { _ in caughtUp.succeed(outcome) }
                self.scheduleReady()
                return caughtUp.futureResult
            }
        }
    }

    /// Proposes on this node's replica; answers `notLeader` with a hint when it is not the leader.
    func proposeHere(_ request: ShardRequest) -> EventLoopFuture<ShardAnswer> {
        let promise = loop.makePromise(of: ShardAnswer.self)
        proposeHere(request) { promise.succeed(Self.answer($0)) }
        return promise.futureResult
    }

    /// Proposes on this node's replica when it leads the shard (a read on any replica), once the leader's
    /// checks passed (`admit`: A1's budgets, W3's pre-send check), stamped with this node's clock, and runs the
    /// ready loop soon. Every road to the shard ends here, on its leader. `body`: the request's bytes, when a
    /// peer's call brought it: an entry carries them as they came, unless the checks changed the command.
    func proposeHere(_ request: ShardRequest, body: [UInt8]? = nil,
                     then completion: @escaping (Result<ShardOutcome, ClusterError>) -> Void) {
        loop.preconditionInEventLoop()
        if !request.isRead, let leader = leaderElsewhere(of: request.shard) {
            return completion(.failure(.notLeader(leader: leader)))
        }
        switch admit(request) {
        case .now(let admitted): propose(admitted, request, body, completion)
        case .after(let verdict, let decide): whenChecked(verdict) { self.propose(decide($0), request, body, completion) }
        }
    }

    private func propose(_ admitted: Admitted, _ request: ShardRequest, _ body: [UInt8]?,
                         _ completion: @escaping (Result<ShardOutcome, ClusterError>) -> Void) {
        switch admitted {
        case .refuse(let outcome):
            return completion(.success(outcome))
        case .asReceived:
            host.propose(request, encoded: body, timestamp: Self.now(), completion: completion)
        case .append(let command):
            var changed = request
            changed.command = command
            host.propose(changed, timestamp: Self.now(), completion: completion)
        }
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

    func proposeMetaHere(_ request: MetaRequest, body: [UInt8]? = nil) -> EventLoopFuture<GroupAnswer<MetaOutcome>> {
        loop.preconditionInEventLoop()
        let promise = loop.makePromise(of: GroupAnswer<MetaOutcome>.self)
        host.proposeMeta(request, encoded: body, timestamp: Self.now()) { promise.succeed(Self.answer($0)) }
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
    static let metaRequestPath = "/rpc/v1/meta/request"
    static let metaStatePath = "/rpc/v1/meta/state"

    /// The commands' calls:
    /// - `propose` and `meta/request` (node to node): propose on this replica only, never forward again (one
    ///   hop); the body is a `GroupRequest`, and the entry carries it as it came. `meta/propose` is `meta/request`
    ///   in the form of callers before peer protocol 17 (the command, then the key);
    /// - `submit` (tools): route a shard command (a room's or an IM one) to its leader wherever it is, as
    ///   `submit(_:deadline:)` does;
    /// - `leader`: the leader this node knows for a shard;
    /// - `meta/state`: this node's copy of the meta state (for nodes that hold no meta replica).
    static let commandCalls: [PeerCall] = [
        PeerCall(path: proposePath, shard: PeerCall.leadingShard) { driver, request in
            guard let command = driver.shardRequest(request.body) else { return driver.refuse(400, "undecodable command") }
            return driver.proposeForPeer(command, body: request.body, answering: request.version)
        },
        PeerCall(path: submitPath, shard: PeerCall.leadingShard) { driver, request in
            guard let command = driver.shardRequest(request.body) else { return driver.refuse(400, "undecodable command") }
            let submitted = driver.submit(command)
            let promise = submitted.eventLoop.makePromise(of: PeerResponse.self)
            let version = request.version
            submitted.whenComplete { result in
                let answer: ShardAnswer
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
        PeerCall(path: metaRequestPath) { driver, request in
            guard let meta = try? MetaRequest(decoding: request.body), meta.shard == RaftHost.metaShard else {
                return driver.refuse(400, "undecodable meta request")
            }
            return driver.loop.flatSubmit { driver.proposeMetaHere(meta, body: request.body) }
                .map { PeerResponse(status: 200, body: $0.encoded()) }
        },
        PeerCall(path: metaProposePath) { driver, request in
            guard let meta = try? MetaRequest(legacyMetaBody: request.body) else {
                return driver.refuse(400, "undecodable meta command")
            }
            return driver.loop.flatSubmit { driver.proposeMetaHere(meta) }.map { PeerResponse(status: 200, body: $0.encoded()) }
        },
        PeerCall(path: metaStatePath) { driver, _ in
            driver.loop.submit {
                guard let state = driver.host.metaState else { return PeerResponse(status: 404, body: []) }
                return PeerResponse(status: 200, body: state.snapshot())
            }
        },
    ]

    /// A peer's request, when it reads and names a shard of the map. The webhook outbox's command is the
    /// shard leader's own (it proposes it where it leads): no peer may send one.
    func shardRequest(_ body: [UInt8]) -> ShardRequest? {
        guard let request = try? ShardRequest(decoding: body), (0..<shardMap.shardCount).contains(request.shard) else {
            return nil
        }
        if case .webhook = request.command { return nil }
        return request
    }

    /// A peer's proposal (`/rpc/v1/propose`, and the older `/rpc/v1/im/propose`), proposed here only: one
    /// promise answered from the proposal's completion (every write entering at a follower comes this way: no
    /// task and no mapped futures per call).
    func proposeForPeer(_ request: ShardRequest, body: [UInt8]? = nil, answering version: Int) -> EventLoopFuture<PeerResponse> {
        let promise = loop.makePromise(of: PeerResponse.self)
        let propose: @Sendable () -> Void = {
            self.proposeHere(request, body: body) { promise.succeed(PeerResponse(status: 200, body: Self.answer($0).encoded(forCaller: version))) }
        }
        if loop.inEventLoop { propose() } else { loop.execute(propose) }
        return promise.futureResult
    }

    /// A call refused before any work, with a sentence for the operator.
    func refuse(_ status: Int, _ text: String) -> EventLoopFuture<PeerResponse> {
        loop.makeSucceededFuture(PeerResponse.text(status, text))
    }
}

/// The checks a shard's leader makes before it appends a write (issue 34: one place, whichever road the
/// command came by — this node's edge, a follower's or a replica-less node's call, the server API): A1's send
/// budgets and W3's pre-send check with the app server, for rooms and IM alike.
extension RaftDriver {
    /// What the leader's checks made of a write: append it as it came, append this command instead (W3's
    /// verdict may have changed a message), or answer this and append nothing.
    enum Admitted {
        case asReceived
        case append(ShardCommand)
        case refuse(ShardOutcome)
    }

    /// The checks' answer: at once (every command but one its app server checks first: no closure, no
    /// future), or once the app server's verdict came (W3), decided on this loop.
    enum Admission {
        case now(Admitted)
        case after(EventLoopFuture<PreSendVerdict>, decide: (PreSendVerdict) -> Admitted)
    }

    /// Runs the leader's checks on `request`.
    func admit(_ request: ShardRequest) -> Admission {
        guard case .session(let sender) = request.actor else { return .now(.asReceived) }
        switch request.command {
        case .room(.sendMessage(let m)): return admitRoomMessage(m, from: sender, shard: request.shard)
        case .im(let account, let command): return admitIm(command, account: account, request)
        default: return .now(.asReceived)
        }
    }

    /// A1: a client session's message counts against its room's budgets (the app server's never does); W3:
    /// in a room its app checks, the app server sees it first, once the budget is charged.
    private func admitRoomMessage(_ m: SendMessage, from sender: SessionIdentity, shard: ShardID) -> Admission {
        let budget = host.sendBudget(shard: shard, roomId: m.roomId)
        if !budget.isUnlimited, let wait = throttle.admit(roomId: m.roomId, userId: sender.userId, budget: budget, now: Self.now()) {
            sendsOverBudget += 1
            host.countOverBudget(.sendMessage(m))
            return .now(.refuse(.room(ApplyOutcome(result: .failure(.sendRateLimited(retryAfterMillis: wait)), events: []))))
        }
        guard let gate = preSend, gate.checkMillis(roomId: m.roomId) != nil,
              let verdict = gate.verdict(on: m, sender: sender, eventLoop: loop) else { return .now(.asReceived) }
        return .after(verdict) { v in
            if let refusal = v.refusal { return .refuse(.room(ApplyOutcome(result: .failure(refusal), events: []))) }
            return .append(.room(.sendMessage(v.applied(to: m))))
        }
    }

    /// A1 and W3 for IM (`imBudget`; `preSend.im`: a client's one-to-one or team message its app checks first).
    private func admitIm(_ command: ImShardCommand, account: String, _ request: ShardRequest) -> Admission {
        if let b = imBudget(command, request),
           let wait = throttle.admit(roomId: b.key, userId: b.sender, budget: b.budget, now: Self.now()) {
            return .now(.refuse(.im(.failure(ImError(.sendRateLimited, RoomError.sendRateLimited(retryAfterMillis: wait).message)))))
        }
        guard let gate = preSend, gate.imCheckMillis(account: account) != nil,
              let message = ImPreSend(command, from: account),
              let verdict = gate.verdict(onIm: message, eventLoop: loop) else { return .now(.asReceived) }
        return .after(verdict) { v in
            if let refusal = v.imRefusal { return .refuse(.im(.failure(refusal))) }
            return .append(.im(account: account, message.command(applying: v, to: command)))
        }
    }

    /// A1 for IM: a client session's team message counts against the team's budgets, its one-to-one message
    /// against the receiver's (a flood into one user's conversation), each with the sender's own — the app's
    /// `SendBudget`, as for a room. So does everything else a session puts into another user's log or a
    /// team's (issue 33): a friend request (the target's), a team application and an invitation (the team's).
    /// The app server's sends and the relay are never charged. Returns the bucket key, the sender and the
    /// budget, or nil when the command is not budgeted.
    func imBudget(_ command: ImShardCommand, _ request: ShardRequest)
        -> (key: String, sender: String, budget: SendBudget)? {
        guard case .session(let s) = request.actor else { return nil }
        let scopedId: String
        let key: String
        switch command {
        case .team(let teamId, .send), .team(let teamId, .apply), .team(let teamId, .invite):
            (scopedId, key) = (teamId, "t:" + teamId)
        case .send(let m): (scopedId, key) = (m.to, "u:" + m.to)
        case .user(.friend(.request, let target, _)): (scopedId, key) = (target, "u:" + target)
        default: return nil
        }
        let budget = host.sendBudget(shard: request.shard, roomId: scopedId)
        return budget.isUnlimited ? nil : (key, s.userId, budget)
    }

    /// W3: `then` runs on this loop with the app's verdict; a check that failed outright reads as unchecked.
    /// Only this message waits: the loop goes on meanwhile.
    func whenChecked(_ verdict: EventLoopFuture<PreSendVerdict>, then: @escaping (PreSendVerdict) -> Void) {
        verdict.hop(to: loop).whenComplete { then((try? $0.get()) ?? .unchecked(why: "the check failed")) }
    }
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
