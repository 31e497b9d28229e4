import Foundation
import NIOCore
import ParleyCluster
import ParleyIM
import ParleyPlacement
import ParleyRooms
import ParleyShardState

/// Issue 35 item 3: a connection's requests answered on its own event loop, with no hop through the `Edge`
/// actor. Once the connection said `hello`, every request is admitted there (A9, A1, A8, A6) and the room
/// commands of rooms it is in (all but `enter` and `exit`), `ping` and `authMode` are answered there: the
/// command goes to its shard and the answer comes back to the loop; so is a logged-in device's one-to-one
/// message to an account the node's registry knows, and its team message. The barriers (`hello`, `enter`, `exit`, `imLogin`) and
/// the other IM ops still run on the actor, which owns the sessions they change.
extension Edge {
    /// Ops that change what the connection's later requests see (its hello, account, rooms, IM login); they
    /// run alone (`RequestLanes`) and on the actor.
    static let barrierOps: Set<String> = ["hello", "enter", "exit", "imLogin"]

    /// Handles `request` on the connection's loop; nil when it belongs to the actor (`receive`). The future
    /// completes, on `loop`, once the answer is queued for the connection.
    nonisolated func receiveOnLoop(_ connection: UInt64, socket: ClientSocket, _ request: ClientRequest,
                                   loop: any EventLoop) -> EventLoopFuture<Void>? {
        guard !Self.barrierOps.contains(request.op) else { return nil }
        let sessions = socket.sessions
        guard sessions.read({ $0.helloDone && !$0.closing }) else { return nil }
        let op: ClientOp
        do {
            op = try admit(sessions, request)
        } catch {
            socket.send(TextFrame(EventFrame.error(id: request.id, error)))
            return loop.makeSucceededVoidFuture()
        }
        switch op {
        case .ping, .authMode:
            socket.send(TextFrame(Self.answer(id: request.id, op, sessions.read { $0 })))
            return loop.makeSucceededVoidFuture()
        case .room(let roomId, let command) where !Self.isExit(command):
            return roomCommand(socket, connection: connection, id: request.id, roomId: roomId, command)
        case .im(.send(let message)):
            if let sent = p2pMessage(socket, connection: connection, id: request.id, message) { return sent }
            return loop.makeFutureWithTask { await self.run(connection, id: request.id, op) }
        case .im(.team(let teamId, let command)) where command.isMessage:
            if let sent = teamMessage(socket, connection: connection, id: request.id, teamId: teamId, command) { return sent }
            return loop.makeFutureWithTask { await self.run(connection, id: request.id, op) }
        case .hello, .enter, .room, .im:
            return loop.makeFutureWithTask { await self.run(connection, id: request.id, op) }
        }
    }

    /// A one-to-one message from a logged-in device (issue 35), sent from the connection's loop when the
    /// registry as this node last read it knows the receiver; nil otherwise (the actor asks the registry again,
    /// and answers 4018 before a login, or that the account does not exist).
    nonisolated func p2pMessage(_ socket: ClientSocket, connection: UInt64, id: Int64, _ message: P2PSend)
        -> EventLoopFuture<Void>? {
        guard let login = socket.sessions.read({ $0.im }), cluster.knowsUser(appKey: login.appKey, account: message.to) else {
            return nil
        }
        var m = message
        m.to = AppScope.scoped(m.to, in: login.namespace)
        // Applied on the receiver's shard, where its blocklist is.
        return imOnLoop(socket, connection: connection, id: id, login: login, .send(m), shard: cluster.shard(ofUser: m.to))
    }

    /// A logged-in device's team message (issue 35), sent from the connection's loop: it names no account to
    /// check; the team's shard decides membership, mute and budget. Nil before a login (the actor answers 4018).
    nonisolated func teamMessage(_ socket: ClientSocket, connection: UInt64, id: Int64, teamId: String, _ command: TeamCommand)
        -> EventLoopFuture<Void>? {
        guard let login = socket.sessions.read({ $0.im }) else { return nil }
        let scoped = AppScope.scoped(teamId, in: login.namespace)
        return imOnLoop(socket, connection: connection, id: id, login: login, .team(teamId: scoped, command),
                        shard: cluster.shard(ofTeam: scoped))
    }

    /// Submits an IM command of the connection's login from its loop and queues the answer there.
    private nonisolated func imOnLoop(_ socket: ClientSocket, connection: UInt64, id: Int64, login: (appKey: String, account: String, scoped: String, namespace: String),
                                      _ command: ImShardCommand, shard: ShardID) -> EventLoopFuture<Void> {
        let identity = SessionIdentity(userId: login.scoped, authMode: .imSession,
                                       sessionId: Self.sessionId(edgeId: cluster.edgeId, connection: connection),
                                       edgeId: cluster.edgeId)
        return cluster.submit(.im(shard: shard, actor: .session(identity), account: login.scoped, command: command),
                              on: socket.eventLoop)
            .map { outcome in socket.send(TextFrame(Self.imAnswer(id: id, outcome.imAnswer, namespace: login.namespace))) }
            .flatMapErrorThrowing { error in socket.send(TextFrame(EventFrame.error(id: id, ProtocolError.from(error)))) }
    }

    private static func isExit(_ command: RoomCommand) -> Bool {
        if case .exit = command { return true }
        return false
    }

    /// Any room command but enter and exit: the session must be in the room on this connection (13100). Runs
    /// wherever it is called; the answer is queued for the connection and the future completes on its loop.
    nonisolated func roomCommand(_ socket: ClientSocket, connection: UInt64, id: Int64, roomId: String,
                                 _ command: RoomCommand) -> EventLoopFuture<Void> {
        let loop = socket.eventLoop
        let began = ContinuousClock.now
        guard let account = socket.sessions.read({ $0.rooms.contains(roomId) ? $0.account : nil }) else {
            socket.send(TextFrame(EventFrame.error(id: id, .cluster(RoomErrorCode.notEntered.rawValue, "not in the room"))))
            return loop.makeSucceededVoidFuture()
        }
        let identity = SessionIdentity(userId: account.userId, authMode: account.mode,
                                       sessionId: Self.sessionId(edgeId: cluster.edgeId, connection: connection),
                                       edgeId: cluster.edgeId)
        let metrics = self.metrics
        let cluster = self.cluster
        let submitted: EventLoopFuture<ShardOutcome>
        let shard = cluster.shard(ofRoom: roomId)
        if case .sendMessage(var send) = command, send.priority != .normal {
            // D3: a priority is written (command tag 40) only once every node reads it; until then the message
            // goes as a normal one (a rolling upgrade neither refuses nor loses it).
            submitted = loop.makeFutureWithTask {
                if !(await cluster.everyNodeHas(.messagePriority)) { send.priority = .normal }
                return try await cluster.submit(.room(shard: shard, actor: .session(identity), command: .sendMessage(send)))
            }
        } else {
            submitted = cluster.submit(.room(shard: shard, actor: .session(identity), command: command), on: loop)
        }
        return submitted
            .flatMap { outcome -> EventLoopFuture<Void> in
                switch outcome.roomAnswer.result {
                case .failure(let e) where e.code == .notEntered:
                    return loop.makeFutureWithTask { await self.lost(connection, id: id, roomId: roomId, e) }
                case .failure(let e):
                    socket.send(TextFrame(EventFrame.error(id: id, ProtocolError.from(e))))
                case .success(let reply):
                    socket.send(TextFrame(EventFrame.answer(id: id) { j in Self.writeReply(reply, into: &j) }))
                    if case .messageSent = reply {
                        metrics?.answered(since: began, message: true)
                        return loop.makeSucceededVoidFuture()
                    }
                }
                metrics?.answered(since: began, message: false)
                return loop.makeSucceededVoidFuture()
            }
            .flatMapErrorThrowing { error in
                socket.send(TextFrame(EventFrame.error(id: id, ProtocolError.from(error))))
                metrics?.answered(since: began, message: false)
            }
    }

    /// The session id of a connection of this edge (unique across the cluster: the edge id names the node's run).
    static func sessionId(edgeId: String, connection: UInt64) -> String { "\(edgeId)#\(connection)" }

    /// The answer to `ping` (the edge's clock) and to `authMode` (13100 unless the connection is in the room).
    static func answer(id: Int64, _ op: ClientOp, _ state: ConnectionSessions.State) -> String {
        switch op {
        case .authMode(let roomId):
            guard let account = state.account, state.rooms.contains(roomId) else {
                return EventFrame.error(id: id, .cluster(RoomErrorCode.notEntered.rawValue, "not in the room"))
            }
            return EventFrame.answer(id: id) { j in
                j.beginObject(); j.field("authMode", account.mode.protocolName); j.endObject()
            }
        default:
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            return EventFrame.answer(id: id) { j in
                j.beginObject(); j.field("time", now); j.endObject()
            }
        }
    }
}
