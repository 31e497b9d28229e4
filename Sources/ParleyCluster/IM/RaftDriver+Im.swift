import NIOCore
import ParleyIM
import ParleyRooms
import ParleyTransport
import ParleyShardState
import ParleyPlacement

/// Issue 19: IM commands on the shards' groups, wherever their leaders are (docs/im.md).
extension RaftDriver {
    static let imProposePath = "/rpc/v1/im/propose"
    static let imCalls = [PeerCall(path: imProposePath, shard: PeerCall.leadingShard) { driver, request in driver.handleImPropose(request.body) }]

    /// The shard of a user's IM state and of a team.
    public func shard(ofUser account: String) -> ShardID { shardMap.shard(ofUser: account) }
    public func shard(ofTeam teamId: String) -> ShardID { shardMap.shard(ofTeam: teamId) }

    /// Applies an IM command on `shard` for `account` (app-scoped), retrying while leadership moves until
    /// `deadline`. Callers check first that every node reads IM commands (`PeerProtocol.Feature.im`).
    public func submitIm(_ command: ImShardCommand, account: String, shard: ShardID, actor: CommandActor,
                         requestKey: RequestKey? = nil,
                         deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<Result<ImApplied, ImError>> {
        // Issue 38: a team command that adds users asks their own shards first whether they are in
        // `maxTeamsPerUser` teams already (the team's shard cannot see that) — on every road, the edge's and the
        // server API's, since both come here.
        if case .team(_, let teamCommand) = command, case let joining = teamCommand.joiningAccounts(actor: account),
           !joining.isEmpty {
            return teamCapRefusal(joining, actor: actor, deadline: deadline).flatMap { refusal in
                if let refusal { return self.loop.makeSucceededFuture(.failure(refusal)) }
                return self.routeIm(command, account: account, shard: shard, actor: actor, requestKey: requestKey,
                                    deadline: deadline)
            }
        }
        if case .read(.conversations) = command {
            return conversations(account: account, shard: shard, actor: actor, deadline: deadline)
        }
        return routeIm(command, account: account, shard: shard, actor: actor, requestKey: requestKey, deadline: deadline)
    }

    /// Issue 38 item 4: a user's conversations — the one-to-one ones from its shard, then a summary of each of
    /// its teams from the teams' shards (one read per shard holding some), newest message first.
    private func conversations(account: String, shard: ShardID, actor: CommandActor, deadline: NIODeadline)
        -> EventLoopFuture<Result<ImApplied, ImError>> {
        let read = { (command: ImShardCommand, shard: ShardID) in
            self.routeIm(command, account: account, shard: shard, actor: actor, requestKey: nil, deadline: deadline)
        }
        return read(.read(.conversations), shard).and(read(.read(.relations), shard)).flatMap { oneToOne, relations in
            guard case .success(.read(.conversations(let list, _))) = oneToOne else { return self.loop.makeSucceededFuture(oneToOne) }
            guard case .success(.read(.relations(let r))) = relations else { return self.loop.makeSucceededFuture(relations) }
            let byShard = Dictionary(grouping: r.teams) { self.shard(ofTeam: $0) }
            let reads = byShard.keys.sorted().map { read(.read(.teamSummaries(teamIds: byShard[$0]!)), $0) }
            return EventLoopFuture.whenAllSucceed(reads, on: self.loop).map { answers in
                var teams: [TeamSummary] = []
                for answer in answers {
                    switch answer {
                    case .success(.read(.teamSummaries(let some))): teams += some
                    case .failure(let error): return .failure(error)
                    default: return .failure(ImError(.badParameter, "unexpected reply to a team summary"))
                    }
                }
                teams.sort { ($0.last?.time ?? 0, $0.teamId) > ($1.last?.time ?? 0, $1.teamId) }
                return .success(.read(.conversations(list, teams: teams)))
            }
        }
    }

    /// `limitExceeded` for the first of `accounts` already in `maxTeamsPerUser` teams (by a linearizable read of
    /// its user record), nil when none is. Two joins of one user racing each other may both pass: the cap can be
    /// passed by the joins in flight at once, never by more.
    private func teamCapRefusal(_ accounts: [String], actor: CommandActor, deadline: NIODeadline)
        -> EventLoopFuture<ImError?> {
        let cap = ShardState.imLimits.maxTeamsPerUser
        let reads = accounts.map { user in
            routeIm(.read(.relations), account: user, shard: shard(ofUser: user), actor: actor, requestKey: nil,
                    deadline: deadline).map { result -> ImError? in
                guard case .success(.read(.relations(let r))) = result, r.teams.count >= cap else { return nil }
                return ImError(.limitExceeded, "\(AppScope.local(user)) is a member of \(cap) teams already")
            }
        }
        return EventLoopFuture.whenAllSucceed(reads, on: loop).map { $0.compactMap { $0 }.first }
    }

    private func routeIm(_ command: ImShardCommand, account: String, shard: ShardID, actor: CommandActor,
                         requestKey: RequestKey?, deadline: NIODeadline) -> EventLoopFuture<Result<ImApplied, ImError>> {
        if let other = elsewhere(shard) {
            return other.routeIm(command, account: account, shard: shard, actor: actor, requestKey: requestKey,
                                 deadline: deadline).hop(to: loop)
        }
        let request = ForwardedImCommand(shard: shard, actor: actor, account: account, command: command, requestKey: requestKey)
        return loop.flatSubmit {
            let route = GroupRoute<ShardOutcome>(
                what: "shard \(shard)", path: Self.imProposePath, body: request.encoded(),
                replicas: self.host.replicaNodes(of: shard),
                here: self.host.leader(of: shard) != nil ? { self.proposeImHere(request) } : nil)
            // A1: a budgeted command reaches the shard's leader: a replica here that does not lead answers
            // with its hint (`proposeImHere`), asked again on every try, as room messages are.
            return self.route(route, deadline)
        }.map(Self.imResult)
    }

    /// What an IM command's shard answered, as its caller reads it.
    @Sendable static func imResult(_ outcome: ShardOutcome) -> Result<ImApplied, ImError> {
        switch outcome {
        case .im(let result): return result
        case .room(let refused):
            // The group refused the request's key before applying (SPEC A7): the only room answer an
            // IM command gets.
            let replayed = refused.errorCode == .requestReplayed
            return .failure(ImError(replayed ? .requestReplayed : .tooManyRequests,
                                    replayed ? RequestRefusal.replayed.message : RequestRefusal.ledgerFull.message))
        case .webhook:
            return .failure(ImError(.badParameter, "not an IM answer"))
        }
    }

    /// A1 for IM: a client session's team message counts against the team's budgets, its one-to-one message
    /// against the receiver's (a flood into one user's conversation), each with the sender's own — the app's
    /// `SendBudget`, as for a room. So does everything else a session puts into another user's log or a
    /// team's (issue 33): a friend request (the target's), a team application and an invitation (the team's).
    /// The app server's sends and the relay are never charged. Returns the bucket key, the sender and the
    /// budget, or nil when the command is not budgeted.
    func budget(of request: ForwardedImCommand) -> (key: String, sender: String, budget: SendBudget)? {
        guard case .session(let s) = request.actor else { return nil }
        let scopedId: String
        let key: String
        switch request.command {
        case .team(let teamId, .send), .team(let teamId, .apply), .team(let teamId, .invite):
            (scopedId, key) = (teamId, "t:" + teamId)
        case .send(let m): (scopedId, key) = (m.to, "u:" + m.to)
        case .user(.friend(.request, let target, _)): (scopedId, key) = (target, "u:" + target)
        default: return nil
        }
        let budget = host.sendBudget(shard: request.shard, roomId: scopedId)
        return budget.isUnlimited ? nil : (key, s.userId, budget)
    }

    func proposeImHere(_ request: ForwardedImCommand) -> EventLoopFuture<GroupAnswer<ShardOutcome>> {
        loop.preconditionInEventLoop()
        if !request.isRead, let leader = leaderElsewhere(of: request.shard) {
            return loop.makeSucceededFuture(.notLeader(leader))
        }
        // W3 for IM: a client's one-to-one or team message its app checks first (`preSend.im`).
        var check: (gate: any PreSendGate, message: ImPreSend)?
        if case .session = request.actor, let gate = preSend, gate.imCheckMillis(account: request.account) != nil,
           let message = ImPreSend(request.command, from: request.account) {
            check = (gate, message)
        }
        let budget = budget(of: request)
        if let b = budget, let wait = throttle.admit(roomId: b.key, userId: b.sender, budget: b.budget, now: Self.now()) {
            return loop.makeSucceededFuture(.applied(.im(.failure(
                ImError(.sendRateLimited, RoomError.sendRateLimited(retryAfterMillis: wait).message)))))
        }
        let promise = loop.makePromise(of: GroupAnswer<ShardOutcome>.self)
        func propose(_ command: ImShardCommand) {
            host.proposeIm(command, account: request.account, shard: request.shard, actor: request.actor,
                           timestamp: Self.now(), requestKey: request.requestKey) { promise.succeed(Self.answer($0)) }
            scheduleReady()
        }
        guard let check, let verdict = check.gate.verdict(onIm: check.message, eventLoop: loop) else {
            propose(request.command)
            return promise.futureResult
        }
        whenChecked(verdict) { v in
            if let refusal = v.imRefusal { return promise.succeed(.applied(.im(.failure(refusal)))) }
            propose(check.message.command(applying: v, to: request.command))
        }
        return promise.futureResult
    }

    func handleImPropose(_ body: [UInt8]) -> EventLoopFuture<PeerResponse> {
        guard let request = try? ForwardedImCommand(decoding: body), (0..<shardMap.shardCount).contains(request.shard) else {
            return loop.makeSucceededFuture(PeerResponse(status: 400, body: Array("undecodable IM command".utf8)))
        }
        // On the loop already (peers' calls arrive there): no task to hop over, as for room commands.
        let answer = loop.inEventLoop ? proposeImHere(request) : loop.flatSubmit { self.proposeImHere(request) }
        return answer.map { PeerResponse(status: 200, body: $0.encoded()) }
    }
}
