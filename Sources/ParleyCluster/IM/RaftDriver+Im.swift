import NIOCore
import ParleyIM
import ParleyRooms

/// Issue 19: IM commands on the shards' groups, wherever their leaders are (docs/im.md).
extension RaftDriver {
    static let imProposePath = "/rpc/v1/im/propose"

    /// The shard of a user's IM state and of a team.
    public func shard(ofUser account: String) -> ShardID { shardMap.shard(ofUser: account) }
    public func shard(ofTeam teamId: String) -> ShardID { shardMap.shard(ofTeam: teamId) }

    /// Applies an IM command on `shard` for `account` (app-scoped), retrying while leadership moves until
    /// `deadline`. Callers check first that every node reads IM commands (`PeerProtocol.Feature.im`).
    public func submitIm(_ command: ImShardCommand, account: String, shard: ShardID, actor: CommandActor,
                         requestKey: RequestKey? = nil,
                         deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<Result<ImApplied, ImError>> {
        let request = ForwardedImCommand(shard: shard, actor: actor, account: account, command: command, requestKey: requestKey)
        return loop.flatSubmit {
            self.route(GroupRoute<ShardOutcome>(
                what: "shard \(shard)", path: Self.imProposePath, body: request.encoded(),
                replicas: self.host.replicaNodes(of: shard),
                here: self.host.leader(of: shard) != nil ? { self.proposeImHere(request) } : nil), deadline)
        }.map { outcome in
            switch outcome {
            case .im(let result): return result
            case .room(let refused):
                // The group refused the request's key before applying (SPEC A7): the only room answer an
                // IM command gets.
                let replayed = refused.errorCode == .requestReplayed
                return .failure(ImError(replayed ? .requestReplayed : .tooManyRequests,
                                        replayed ? RequestRefusal.replayed.message : RequestRefusal.ledgerFull.message))
            }
        }
    }

    func proposeImHere(_ request: ForwardedImCommand) -> EventLoopFuture<GroupAnswer<ShardOutcome>> {
        loop.preconditionInEventLoop()
        let promise = loop.makePromise(of: GroupAnswer<ShardOutcome>.self)
        host.proposeIm(request.command, account: request.account, shard: request.shard, actor: request.actor,
                       timestamp: Self.now(), requestKey: request.requestKey) { promise.succeed(Self.answer($0)) }
        scheduleReady()
        return promise.futureResult
    }

    func handleImPropose(_ body: [UInt8]) -> EventLoopFuture<PeerResponse> {
        guard let request = try? ForwardedImCommand(decoding: body), (0..<shardMap.shardCount).contains(request.shard) else {
            return loop.makeSucceededFuture(PeerResponse(status: 400, body: Array("undecodable IM command".utf8)))
        }
        return loop.flatSubmit { self.proposeImHere(request) }.map { PeerResponse(status: 200, body: $0.encoded()) }
    }
}
