import NIOCore
import ParleyIM
import ParleyRooms
import ParleyTransport
import ParleyShardState
import ParleyPlacement

/// Issue 19: IM commands on the shards' groups, wherever their leaders are (docs/im.md).
extension RaftDriver {
    static let imProposePath = "/rpc/v1/im/propose"
    static let imCalls = [PeerCall(path: imProposePath, shard: PeerCall.leadingShard) { driver, request in driver.handleImPropose(request) }]

    /// The shard of a user's IM state and of a team.
    public func shard(ofUser account: String) -> ShardID { shardMap.shard(ofUser: account) }
    public func shard(ofTeam teamId: String) -> ShardID { shardMap.shard(ofTeam: teamId) }

    /// An IM command that asks other shards before (or instead of) its own, as `submit` runs it; nil for the
    /// rest, which go straight to their shard.
    /// - Issue 38: a team command that adds users asks their own shards first whether they are in
    ///   `maxTeamsPerUser` teams already (the team's shard cannot see that).
    /// - Issue 38 item 4: a user's conversations are gathered from several shards.
    func composedIm(_ request: ShardRequest, _ deadline: NIODeadline) -> EventLoopFuture<ShardOutcome>? {
        guard request.asksOtherShards, case .im(let account, let command) = request.command else { return nil }
        if case .read(.conversations) = command {
            return conversations(account: account, shard: request.shard, actor: request.actor, deadline: deadline).map { .im($0) }
        }
        guard case .team(_, let teamCommand) = command else { return nil }
        return teamCapRefusal(teamCommand.joiningAccounts(actor: account), actor: request.actor, deadline: deadline)
            .flatMap { refusal in
                if let refusal { return self.loop.makeSucceededFuture(.im(.failure(refusal))) }
                return self.reachShard(request, deadline)
            }
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

    /// One IM command on its shard, without the compositions (their own parts).
    private func routeIm(_ command: ImShardCommand, account: String, shard: ShardID, actor: CommandActor,
                         requestKey: RequestKey?, deadline: NIODeadline) -> EventLoopFuture<Result<ImApplied, ImError>> {
        reachShard(.im(shard: shard, actor: actor, account: account, command: command, requestKey: requestKey), deadline)
            .map { $0.imAnswer }
    }

    /// Peer protocol 3 to 15's call for IM commands, still served for them: the same proposal as
    /// `/rpc/v1/propose`'s.
    func handleImPropose(_ request: PeerRequest) -> EventLoopFuture<PeerResponse> {
        guard let command = try? ShardRequest(legacyImBody: request.body), (0..<shardMap.shardCount).contains(command.shard) else {
            return refuse(400, "undecodable IM command")
        }
        return proposeForPeer(command, answering: request.version)
    }
}
