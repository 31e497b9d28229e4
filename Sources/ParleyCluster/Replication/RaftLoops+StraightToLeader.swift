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
    /// A request, answered on `loop` (a client connection's): straight to the leader the node knows, else (and
    /// when that answers anything but an outcome) the driver's road. One promise on `loop` either way (no hop
    /// and map per command). A team command that adds users and a user's conversations take the driver's
    /// road: it asks other shards first (`RaftDriver.composedIm`).
    public func submit(_ request: ShardRequest, deadline: NIODeadline, answeringOn loop: EventLoop) -> EventLoopFuture<ShardOutcome> {
        let driver = driver(for: request.shard)
        let promise = loop.makePromise(of: ShardOutcome.self)
        let driverRoad: @Sendable () -> Void = {
            driver.submit(request, deadline: deadline).whenComplete { promise.completeWith($0) }
        }
        let leader = leaders.leader(of: request.shard)
        guard leader != 0, leader != nodeID, !request.asksOtherShards else {
            driverRoad()
            return promise.futureResult
        }
        let (applied, rerouted) = (straightCounters.applied, straightCounters.rerouted)
        let call = driver.peerCall(request)
        // A leader that went silent while another took the shard over: the call gives way (`ShardLeaders`).
        transport.call(leader, path: call.path, body: call.body, timeout: deadline - .now(), on: loop,
                       givesWay: leaders.givesWay(from: leader, of: request.shard)).whenComplete { result in
            guard case .success(let response) = result, let answer = ShardAnswer(response: response) else {
                rerouted.increment()
                return driverRoad()
            }
            switch answer {
            case .applied(let o):
                applied.increment()
                promise.succeed(o)
            case .outcomeUnknown:
                promise.fail(RouteError.outcomeUnknown)
            default:
                rerouted.increment()
                driverRoad()
            }
        }
        return promise.futureResult
    }
}

extension ShardRequest {
    /// An IM command the driver asks other shards about first (`RaftDriver.composedIm`): a team command that
    /// adds users, a user's conversations.
    var asksOtherShards: Bool {
        guard case .im(let account, let command) = command else { return false }
        if case .team(_, let teamCommand) = command { return !teamCommand.joiningAccounts(actor: account).isEmpty }
        if case .read(.conversations) = command { return true }
        return false
    }
}
