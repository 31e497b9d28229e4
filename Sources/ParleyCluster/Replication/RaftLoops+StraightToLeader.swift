import NIOCore
import ParleyIM
import ParleyRaft
import ParleyRooms
import ParleyShardState
import ParleyWire
import ParleyPlacement

/// Issue 35: the client connections' road to a shard leader. When this node's replica of the shard knows
/// another node leads it (or, holding no replica, the shard's feed last named one: `ShardLeaders`), a command
/// goes there straight from the connection's event loop over a link of that
/// loop's own (`PeerTransport.call(_:path:body:timeout:on:)`) and its answer comes back there, with no hop to
/// the Raft loop and back (those two hops were a tenth of a one-writer round trip, and the calls' work sat on
/// the busiest thread). It is the call the driver's route makes, so the leader decides the budget (A1) as for
/// any other road; anything but an outcome — another leader, a link down, a refusal — continues as `submit`
/// does from the start.
extension RaftLoops {
    /// A room command, answered on `loop` (a client connection's).
    public func submit(_ command: RoomCommand, shard: ShardID, actor: CommandActor, deadline: NIODeadline,
                       answeringOn loop: EventLoop) -> EventLoopFuture<ApplyOutcome> {
        straightToLeader(shard: shard, path: RaftDriver.proposePath, deadline: deadline, on: loop,
                         body: { ForwardedCommand(shard: shard, actor: actor, command: command, requestKey: nil).encoded() },
                         outcome: { (outcome: ApplyOutcome) in outcome }) {
            self.submit(command, shard: shard, actor: actor, deadline: deadline).hop(to: loop)
        }
    }

    /// An IM command, answered on `loop`. A team command that adds users and a user's conversations take the
    /// driver's road: it asks other shards first (`RaftDriver.submitIm`).
    public func submitIm(_ command: ImShardCommand, account: String, shard: ShardID, actor: CommandActor,
                         deadline: NIODeadline, answeringOn loop: EventLoop) -> EventLoopFuture<Result<ImApplied, ImError>> {
        let driverRoad: @Sendable () -> EventLoopFuture<Result<ImApplied, ImError>> = {
            self.submitIm(command, account: account, shard: shard, actor: actor, deadline: deadline).hop(to: loop)
        }
        if case .team(_, let teamCommand) = command, !teamCommand.joiningAccounts(actor: account).isEmpty { return driverRoad() }
        if case .read(.conversations) = command { return driverRoad() }
        return straightToLeader(shard: shard, path: RaftDriver.imProposePath, deadline: deadline, on: loop,
                                body: { ForwardedImCommand(shard: shard, actor: actor, account: account, command: command,
                                                           requestKey: nil).encoded() },
                                outcome: RaftDriver.imResult, otherwise: driverRoad)
    }

    private func straightToLeader<Outcome: BinaryCodable & Sendable & Hashable, Answer: Sendable>(
        shard: ShardID, path: String, deadline: NIODeadline, on loop: EventLoop, body: () -> [UInt8],
        outcome: @escaping @Sendable (Outcome) -> Answer, otherwise: @escaping @Sendable () -> EventLoopFuture<Answer>
    ) -> EventLoopFuture<Answer> {
        let leader = leaders.leader(of: shard)
        guard leader != 0, leader != nodeID else { return otherwise() }
        let (applied, rerouted) = (straightCounters.applied, straightCounters.rerouted)
        let routed: @Sendable () -> EventLoopFuture<Answer> = {
            rerouted.increment()
            return otherwise()
        }
        let promise = loop.makePromise(of: Answer.self)
        transport.call(leader, path: path, body: body(), timeout: deadline - .now(), on: loop).whenComplete { result in
            guard case .success(let response) = result, let answer = GroupAnswer<Outcome>(response: response) else {
                return promise.completeWith(routed())
            }
            switch answer {
            case .applied(let o):
                applied.increment()
                promise.succeed(outcome(o))
            case .outcomeUnknown:
                promise.fail(RouteError.outcomeUnknown)
            default:
                promise.completeWith(routed())
            }
        }
        return promise.futureResult
    }
}
