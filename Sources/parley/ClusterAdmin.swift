import Foundation
import NIOCore
import ParleyCluster
import ParleyRaft
import ParleyRooms
import ParleyTransport
import ParleyPlacement

/// Set-up a benchmark does as a cluster tool (with the cluster secret, over the peer port): apps, users and
/// rooms, without going through the server API.
struct ClusterAdmin: Sendable {
    let client: PeerTransport
    let nodes: [NodeID]
    let shardMap: ShardMap

    enum Failure: Error, CustomStringConvertible {
        case refused(String)
        var description: String { if case .refused(let why) = self { why } else { "" } }
    }

    /// Applies a meta command on whichever node leads the meta group, retrying until it is elected.
    func meta(_ command: MetaCommand, deadline: Date = Date().addingTimeInterval(30)) async throws {
        var last = "no answer"
        while Date() < deadline {
            for node in nodes {
                guard let response = try? await client.call(node, path: "/rpc/v1/meta/propose", body: command.encoded()).get(),
                      response.status == 200, let answer = try? GroupAnswer<MetaOutcome>(decoding: response.body) else { continue }
                switch answer {
                case .applied(.refused(_, let why)): throw Failure.refused("meta refused: \(why)")
                case .applied: return
                default: last = "\(answer)"
                }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure.refused("meta command not applied: \(last)")
    }

    /// Routes a room command to its shard's leader through any node.
    @discardableResult
    func room(_ command: RoomCommand, roomId: String, actor: CommandActor = .appServer,
              deadline: Date = Date().addingTimeInterval(30)) async throws -> ApplyOutcome {
        try await shard(command, shard: shardMap.shard(ofRoom: roomId), actor: actor, deadline: deadline)
    }

    /// A1: lifts the message budgets of an app's rooms (`namespace`, "" for rooms made without an app) far
    /// above what a benchmark sends, on every shard: the benchmarks measure replication and fan-out, not
    /// the abuse limits (docs/benchmarks.md says so).
    func unlimitedSends(namespace: String) async throws {
        let lifted = SendBudget.unlimited
        for shard in 0..<shardMap.shardCount {
            _ = try await self.shard(.setSendBudget(namespace: namespace, lifted), shard: shard)
        }
    }

    /// A1: lifts the request budget of the app's client connections (all ops together) as far as it goes.
    func unlimitedRequests(appKey: String) async throws {
        try await meta(.setConnectionBudget(appKey: appKey, .unlimited))
    }

    @discardableResult
    func shard(_ command: RoomCommand, shard: ShardID, actor: CommandActor = .appServer,
               deadline: Date = Date().addingTimeInterval(30)) async throws -> ApplyOutcome {
        let body = ShardRequest.room(shard: shard, actor: actor, command: command).encoded()
        var last = "no answer"
        while Date() < deadline {
            for node in nodes {
                guard let response = try? await client.call(node, path: "/rpc/v1/submit", body: body).get(),
                      response.status == 200, let answer = try? GroupAnswer<ApplyOutcome>(decoding: response.body) else { continue }
                if case .applied(let outcome) = answer { return outcome }
                last = "\(answer)"
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure.refused("room command not applied: \(last)")
    }
}
