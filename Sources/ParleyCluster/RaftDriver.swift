import Foundation
import NIOCore
import ParleyRaft
import ParleyRooms

/// Runs a node's `RaftHost` on one event loop: ticks it on a timer, feeds it peers' batches, runs its ready
/// loop whenever there is work, and routes commands to shard leaders (here or on another node), retrying
/// when leadership moves. Everything that touches the host happens on `loop`.
public final class RaftDriver: @unchecked Sendable {
    public let loop: EventLoop
    private let host: RaftHost
    private let transport: PeerTransport
    private let tickInterval: TimeAmount
    private var tickTask: RepeatedTask?
    private var readyScheduled = false
    /// Set when the ready loop fails (the disk): the node stops taking part rather than risk safety.
    private var fatal: Error?
    public private(set) var eventsPublished = 0

    /// Builds the host on `loop`; `publish` receives applied room events per shard, on `loop`.
    public init(loop: EventLoop, transport: PeerTransport, tickInterval: TimeAmount,
                makeHost: (_ send: @escaping (NodeID, [RaftEnvelope]) -> Void,
                           _ publish: @escaping (ShardID, [RoomEvent]) -> Void) throws -> RaftHost,
                publish: @escaping (ShardID, [RoomEvent]) -> Void = { _, _ in }) throws {
        self.loop = loop
        self.transport = transport
        self.tickInterval = tickInterval
        host = try makeHost({ peer, batch in transport.send(to: peer, batch) }, publish)
    }

    public var nodeID: NodeID { host.config.nodeID }
    public var shardMap: ShardMap { host.config.shardMap }

    public func start() {
        loop.execute {
            self.tickTask = self.loop.scheduleRepeatedTask(initialDelay: self.tickInterval, delay: self.tickInterval) { _ in
                self.host.tick()
                self.runReady()
            }
            self.runReady()
        }
    }

    public func stop() -> EventLoopFuture<Void> {
        loop.submit { self.tickTask?.cancel(); self.tickTask = nil }
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

    private func scheduleReady() {
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
            if try host.processReady() > 0 { scheduleReady() }
        } catch {
            fatal = error
            tickTask?.cancel()
        }
    }

    // MARK: Commands

    /// Applies a command on the shard that holds `roomID`, wherever its leader is; retries while
    /// leadership moves, until `deadline`.
    public func submit(_ command: RoomCommand, roomID: String, actor: CommandActor,
                       deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<ApplyOutcome> {
        submit(command, shard: shardMap.shard(ofRoom: roomID), actor: actor, deadline: deadline)
    }

    public func submit(_ command: RoomCommand, shard: ShardID, actor: CommandActor,
                       deadline: NIODeadline = .now() + .seconds(5)) -> EventLoopFuture<ApplyOutcome> {
        loop.flatSubmit { self.attempt(ForwardedCommand(shard: shard, actor: actor, command: command), deadline) }
    }

    private func attempt(_ request: ForwardedCommand, _ deadline: NIODeadline) -> EventLoopFuture<ApplyOutcome> {
        proposeHere(request).flatMap { answer in
            switch answer {
            case .applied(let outcome):
                return self.loop.makeSucceededFuture(outcome)
            case .notLeader(let leader) where leader != 0 && leader != self.nodeID:
                return self.forward(request, to: leader).flatMap { answer in
                    if case .applied(let outcome) = answer { return self.loop.makeSucceededFuture(outcome) }
                    return self.retry(request, deadline, after: answer)
                }.flatMapError { _ in self.retry(request, deadline, after: .notLeader(0)) }
            default:
                return self.retry(request, deadline, after: answer)
            }
        }
    }

    private func retry(_ request: ForwardedCommand, _ deadline: NIODeadline, after answer: ForwardedAnswer)
        -> EventLoopFuture<ApplyOutcome> {
        guard NIODeadline.now() + .milliseconds(50) < deadline else {
            return loop.makeFailedFuture(RouteError.noLeader(shard: request.shard, last: "\(answer)"))
        }
        return loop.scheduleTask(in: .milliseconds(50)) {}.futureResult.flatMap { self.attempt(request, deadline) }
    }

    /// Proposes on this node's replica; answers `notLeader` with a hint when it is not the leader.
    func proposeHere(_ request: ForwardedCommand) -> EventLoopFuture<ForwardedAnswer> {
        loop.preconditionInEventLoop()
        let promise = loop.makePromise(of: ForwardedAnswer.self)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        host.propose(request.command, shard: request.shard, actor: request.actor, timestamp: now) { result in
            switch result {
            case .success(let outcome): promise.succeed(.applied(outcome))
            case .failure(.notLeader(_, let leader)): promise.succeed(.notLeader(leader))
            case .failure(.shardNotHere): promise.succeed(.notLeader(0))
            case .failure(let error): promise.succeed(.failed("\(error)"))
            }
        }
        scheduleReady()
        return promise.futureResult
    }

    private func forward(_ request: ForwardedCommand, to leader: NodeID) -> EventLoopFuture<ForwardedAnswer> {
        transport.call(leader, path: "/rpc/v1/propose", body: request.encoded()).hop(to: loop).flatMapThrowing { response in
            guard response.status == 200 else { throw RouteError.peerRefused(response.status) }
            return try ForwardedAnswer(decoding: response.body)
        }
    }

    /// Serves the command RPCs:
    /// - `POST /rpc/v1/propose` (node to node): propose on this replica only, never forward again (one hop);
    /// - `POST /rpc/v1/submit` (tools, edges): route to the shard leader wherever it is, as `submit` does.
    public func handle(_ request: PeerRequest) -> EventLoopFuture<PeerResponse> {
        if request.path == "/rpc/v1/leader" {
            var r = ByteReader(request.body)
            guard let shard = try? r.readInt(), r.isAtEnd else {
                return loop.makeSucceededFuture(PeerResponse(status: 400, body: Array("bad shard".utf8)))
            }
            return loop.submit {
                var w = ByteWriter()
                w.write(self.host.leader(of: shard) ?? 0)
                return PeerResponse(status: 200, body: w.bytes)
            }
        }
        guard request.path == "/rpc/v1/propose" || request.path == "/rpc/v1/submit" else {
            return loop.makeSucceededFuture(PeerResponse(status: 404, body: Array("no such call".utf8)))
        }
        guard let command = try? ForwardedCommand(decoding: request.body),
              (0..<shardMap.shardCount).contains(command.shard) else {
            return loop.makeSucceededFuture(PeerResponse(status: 400, body: Array("undecodable command".utf8)))
        }
        if request.path == "/rpc/v1/propose" {
            return loop.flatSubmit { self.proposeHere(command) }.map { PeerResponse(status: 200, body: $0.encoded()) }
        }
        return submit(command.command, shard: command.shard, actor: command.actor)
            .map { PeerResponse(status: 200, body: ForwardedAnswer.applied($0).encoded()) }
            .recover { PeerResponse(status: 200, body: ForwardedAnswer.failed("\($0)").encoded()) }
    }

    // MARK: Placement

    /// Where a shard lives: its replicas (best first) and its leader as known to a replica (0 = none yet).
    public struct ShardPlacement: Sendable, Hashable, Codable {
        public var shard: ShardID
        public var replicas: [NodeID]
        public var leader: NodeID
    }

    /// Answers "which node leads shard S": from this node's own replica when it holds one, else by asking
    /// the shard's replicas in turn.
    public func placement(of shard: ShardID) -> EventLoopFuture<ShardPlacement> {
        loop.flatSubmit {
            let replicas = self.host.replicaNodes(of: shard)
            if let leader = self.host.leader(of: shard) {
                return self.loop.makeSucceededFuture(ShardPlacement(shard: shard, replicas: replicas, leader: leader))
            }
            return self.askLeader(shard, replicas: replicas[...]).map {
                ShardPlacement(shard: shard, replicas: replicas, leader: $0)
            }
        }
    }

    private func askLeader(_ shard: ShardID, replicas: ArraySlice<NodeID>) -> EventLoopFuture<NodeID> {
        guard let next = replicas.first else { return loop.makeSucceededFuture(0) }
        var w = ByteWriter()
        w.write(shard)
        return transport.call(next, path: "/rpc/v1/leader", body: w.bytes).hop(to: loop).flatMapThrowing { response in
            guard response.status == 200 else { throw RouteError.peerRefused(response.status) }
            var r = ByteReader(response.body)
            return try r.readUInt64()
        }.flatMapError { _ in self.askLeader(shard, replicas: replicas.dropFirst()) }
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
                out[shard] = StableHash.mix(self.host.roomsSnapshot(shard: shard)!.reduce(0xCBF2_9CE4_8422_2325) {
                    ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3
                })
            }
            return out
        }
    }

    public var failure: Error? { fatal }
}

public enum RouteError: Error, Equatable {
    case noLeader(shard: ShardID, last: String)
    case peerRefused(Int)
}
