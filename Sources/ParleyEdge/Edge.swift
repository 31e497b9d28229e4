import Foundation
import Logging
import ParleyCluster
import ParleyRooms
import ParleyTransport
import ParleyPlacement

/// The client-facing side of a node: WebSocket connections, their room sessions, and one event feed per
/// shard that has local sessions (docs/cluster.md, "Edge").
///
/// An actor: connections, sessions and feeds change from many tasks. Writes never await inside it — every
/// frame goes to the connection's `ClientSocket` (queued for its event loop in order), so the order in which
/// the actor sends is the order the client reads.
public actor Edge {
    public let cluster: any EdgeCluster
    public let settings: EdgeSettings
    let logger: Logger
    /// Failed logins per address and account (issue 24), and the rate-limited log of them.
    var loginThrottle = LoginThrottle()
    let refusedLogins: RateLimitedWarning
    /// Client connections the edge closed because their pipeline failed (a reset, a write error): counted
    /// (`parley_edge_closes_total{reason="error"}`) and logged at most every 10 s.
    let connectionErrors: RateLimitedWarning
    /// C5 take-overs entered as plain enters because some node does not read them yet (a rolling upgrade).
    let heldBackTakeOvers: RateLimitedWarning
    /// Where frames for each event loop's connections wait for that loop (one drain and flush per burst).
    nonisolated let outboxes: LoopOutboxes
    var nextConnection: UInt64 = 0
    var connections: [UInt64: ClientConnection] = [:]
    var rooms: [String: LocalRoom] = [:]
    var feeds: [ShardID: ShardFeed] = [:]
    /// Issue 35: per Raft loop of this node, the batched poll of the shards its replicas here feed.
    var localFeeds: [Int: LocalFeed] = [:]
    /// Sessions kicked by the batch being delivered; they leave once the whole batch is out, so the events the
    /// same entry addressed to them after the kick (RC `status: destroyed`) still reach them.
    var kickedInBatch: [(connection: UInt64, roomId: String)] = []
    /// The frames of the page being delivered, per event loop (`GatheredWrites`).
    var gathered = GatheredWrites()
    /// E3 room slots this edge's sessions hold, per home shard. The home shard counts this edge among those
    /// with sessions, so its feed is polled (renewing the lease there) while any slot is held.
    var slotHolds: [ShardID: Int] = [:]
    /// Issue 19: the connections logged in for IM, by app-scoped account, and the IM logins per user shard
    /// (each keeps that shard's feed running).
    var imSessions: [String: Set<UInt64>] = [:]
    var imHolds: [ShardID: Int] = [:]
    /// Issue 38: the connections following each team (app-scoped): a supergroup's events reach them.
    var teamFollowers: [String: Set<UInt64>] = [:]
    /// Numbers the membership checks, so an answer to an earlier one is not taken for a later one's.
    var membershipChecks: UInt64 = 0
    /// A1: the request budgets of the apps whose connections this edge holds, as last read.
    nonisolated let appLimits: AppLimits

    /// Where the edge's figures go on `/metrics` (nil: nowhere, as in tests).
    let metrics: EdgeMetrics?
    /// A2: the connections the client port holds (counted before the HTTP pipeline exists).
    public nonisolated let gate: ConnectionGate
    /// A2: refusals at the gate, logged at most once per period (a flood of them is the point of the caps).
    nonisolated let refusedConnections: RateLimitedWarning
    /// Room events fanned out and deliveries written since start (for `/status`).
    private(set) var fanoutEvents = 0
    private(set) var fanoutDeliveries = 0

    public init(cluster: any EdgeCluster, settings: EdgeSettings = EdgeSettings(), logger: Logger,
                metrics: EdgeMetrics? = nil) {
        self.cluster = cluster
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        outboxes = LoopOutboxes(spacing: .milliseconds(Int64(max(0, settings.deliverySpacingMillis))))
        appLimits = AppLimits(cluster: cluster, fallback: settings.requestBudget)
        refusedLogins = RateLimitedWarning(logger: logger, message: "refused client logins")
        connectionErrors = RateLimitedWarning(logger: logger, message: "closed client connections on an error")
        heldBackTakeOvers = RateLimitedWarning(
            logger: logger, message: "moving clients enter as new sessions: a node of the cluster does not read session take-overs yet (peer protocol version below 2)")
        gate = ConnectionGate(maxTotal: settings.maxConnections, maxPerSource: settings.maxConnectionsPerAddress)
        refusedConnections = RateLimitedWarning(logger: logger, message: "refused client-port connections over a cap (503)")
    }

    /// Keeps the connection and session gauges equal to the edge's own state.
    func updateGauges() {
        guard let metrics else { return }
        let c = counts
        metrics.connections.set(Double(c.connections))
        metrics.sessions.set(Double(c.sessions))
    }

    /// A C5 take-over entered as a plain enter (some node does not read it yet): logged, rate-limited.
    func takeOverHeldBack() { heldBackTakeOvers.happened([:]) }

    /// Counts one room event fanned out to `deliveries` local sessions.
    func countFanout(deliveries: Int) {
        fanoutEvents += 1
        fanoutDeliveries += deliveries
        metrics?.fanoutEvents.increment()
        metrics?.fanoutDeliveries.increment(by: deliveries)
    }

    /// The edge's figures for `/status`.
    public var figures: (connections: Int, sessions: Int, feeds: Int, fanoutEvents: Int, fanoutDeliveries: Int) {
        let c = counts
        return (c.connections, c.sessions, c.feeds, fanoutEvents, fanoutDeliveries)
    }

    public nonisolated var edgeId: String { cluster.edgeId }

    /// Registers a new connection; its frames go to `socket`. Returns the connection number.
    func open(socket: ClientSocket, remoteHost: String = "?") -> UInt64 {
        nextConnection += 1
        let n = nextConnection
        var c = ClientConnection(number: n, sessionId: Self.sessionId(edgeId: cluster.edgeId, connection: n), socket: socket)
        c.remoteHost = remoteHost
        connections[n] = c
        updateGauges()
        return n
    }

    /// Number of open connections and of (room, connection) sessions, for status and tests.
    public var counts: (connections: Int, sessions: Int, feeds: Int) {
        (connections.count, rooms.values.reduce(0) { $0 + $1.sessions.count }, feeds.count)
    }

    /// Sends an error for a frame the connection layer refused (binary, too large) and closes.
    func refuseFrame(_ connection: UInt64, _ error: ProtocolError, closeCode: UInt16) {
        guard let c = connections[connection] else { return }
        c.send(EventFrame.error(id: 0, error))
        close(connection, code: closeCode, reason: error.message)
    }

    /// Starts the WebSocket's close handshake; the sessions end when the connection reports `closed`.
    func close(_ connection: UInt64, code: UInt16, reason: String) {
        guard var c = connections[connection], !c.closing else { return }
        c.closing = true
        connections[connection] = c
        c.socket.close(code: code, reason: reason)
    }

    /// The node is stopping: every client is told so (1001); their sessions end as the sockets close.
    public func closeAll() {
        for number in connections.keys.sorted() {
            close(number, code: 1001, reason: "node stopping")
        }
    }

    /// The idle timeout ran out (close 1001).
    func idle(_ connection: UInt64) {
        close(connection, code: 1001, reason: "idle timeout")
    }

    /// The WebSocket is gone: every session of the connection ends as on `exit` (best effort; the domain
    /// clears the user's transient queue items with a 320 PartClear).
    func closed(_ connection: UInt64) {
        guard let c = connections.removeValue(forKey: connection) else { return }
        defer { updateGauges() }
        if let login = c.im { imLoggedOut(connection, login) }
        guard let account = c.account else { return }
        let identity = SessionIdentity(userId: account.userId, authMode: account.mode, sessionId: c.sessionId,
                                       edgeId: cluster.edgeId)
        var exits: [(String, ShardID)] = []
        for roomId in c.rooms {
            guard let shard = rooms[roomId]?.shard else { continue }
            rooms[roomId]?.sessions[connection] = nil
            exits.append((roomId, shard))
        }
        let cluster = self.cluster
        let ending = exits
        let slots = c.slots
        // C5: a client told to move re-enters elsewhere replacing these sessions; their exits then change
        // nothing, and for one that did not move they come after the grace.
        let grace = c.handedOffAt != nil ? Duration.milliseconds(settings.handOffGraceMillis) : .zero
        Task {
            if grace > .zero { try? await Task.sleep(for: grace) }
            for (roomId, shard) in ending {
                _ = try? await cluster.submit(.exit(roomId: roomId), shard: shard, actor: .session(identity))
                if slots.contains(roomId) { self.releaseSlot(identity, roomId: roomId) }
            }
            self.release(rooms: ending.map(\.0))
        }
    }

    /// A frame that did not parse as a request (decoded on the connection's event loop) is answered under
    /// the id it had, if any.
    func reject(_ connection: UInt64, _ frame: RejectedFrame) {
        guard let c = connections[connection], !c.closing else { return }
        c.send(EventFrame.error(id: frame.id, frame.error))
    }

    /// Handles one request of a connection (decoded on its event loop) that its loop did not answer itself
    /// (`receiveOnLoop`): the barriers (`hello`, `enter`, `exit`, `imLogin`) and whatever comes before
    /// `hello` or while the connection closes. The connection's requests of one lane come one at a time, in
    /// order (`RequestLanes`): a room's requests are one lane, `hello`, `enter`, `exit` and `imLogin` run alone.
    func receive(_ connection: UInt64, _ request: ClientRequest) async {
        guard let c = connections[connection], !c.closing else { return }
        let op: ClientOp
        do {
            op = try admit(c.shared, request)
        } catch {
            c.send(EventFrame.error(id: request.id, error))
            return
        }
        await run(connection, id: request.id, op)
    }

    /// What every request passes before its op runs, in order: `hello` first (A9), the connection's budget
    /// (A1, before any work is done for it), the room id scoped to the connection's app (A8; to the app an
    /// enter authenticates for), the op and its fields (A6). Reads only what the connection's loop also knows.
    nonisolated func admit(_ sessions: ConnectionSessions, _ request: ClientRequest) throws(ProtocolError) -> ClientOp {
        var request = request
        let (helloDone, app, budgetApp) = sessions.read { ($0.helloDone, $0.account?.appKey, $0.budgetApp) }
        if !helloDone && request.op != "hello" { throw .helloRequired }
        if let wait = takeRequestToken(sessions, app: budgetApp) {
            metrics?.requestsOverBudget.increment()
            throw .tooManyRequests(retryAfterMillis: wait)
        }
        if let app = request.op == "enter" ? Self.appKey(ofEnter: request.fields) : app {
            request.fields = try request.fields.scopingRoomId(
                to: AppScope.namespace(ofApp: app, legacyApp: settings.legacyRoomsApp))
        }
        return try ClientOp(request)
    }

    /// Runs an admitted op on the actor.
    func run(_ connection: UInt64, id: Int64, _ op: ClientOp) async {
        guard let c = connections[connection] else { return }
        switch op {
        case .hello(let versions):
            hello(c, id: id, versions: versions)
        case .ping, .authMode:
            c.send(Self.answer(id: id, op, c.shared.read { $0 }))
        case .enter(let enter):
            let began = ContinuousClock.now
            await self.enter(connection, id: id, enter)
            metrics?.answered(since: began, message: false)
        case .room(let roomId, .exit):
            let began = ContinuousClock.now
            await exit(connection, id: id, roomId: roomId)
            metrics?.answered(since: began, message: false)
        case .room(let roomId, let command):
            _ = try? await roomCommand(c.socket, connection: connection, id: id, roomId: roomId, command).get()
        case .im(let op):
            await im(connection, id: id, op)
        }
    }

    /// The app key an enter request authenticates for (nil when it has none: the enter is refused anyway).
    static func appKey(ofEnter fields: RequestFields) -> String? {
        guard case .object(let auth)? = fields.values["auth"], case .string(let app)? = auth["appKey"] else { return nil }
        return app
    }

    private func hello(_ c: ClientConnection, id: Int64, versions: [Int64]) {
        guard !c.helloDone else {
            c.send(EventFrame.error(id: id, .helloTwice))
            return
        }
        guard let version = versions.filter({ EdgeSettings.versions.contains($0) }).max() else {
            c.send(EventFrame.error(id: id, .noCommonVersion))
            close(c.number, code: 1002, reason: "no protocol version in common")
            return
        }
        connections[c.number]?.helloDone = true
        c.socket.helloAccepted()
        let settings = self.settings
        let edgeId = cluster.edgeId
        c.send(EventFrame.answer(id: id) { j in
            j.beginObject()
            j.field("version", version)
            j.field("heartbeatMs", settings.heartbeatMillis)
            j.field("idleTimeoutMs", settings.idleTimeoutMillis)
            j.field("maxFrameBytes", settings.maxFrameBytes)
            j.field("edge", edgeId)
            j.field("connection", c.sessionId)
            j.endObject()
        })
    }

    /// E11: the session leaves the room; its own `status: quit` comes with the exit's outcome (the feed would
    /// find the session already gone).
    private func exit(_ connection: UInt64, id: Int64, roomId: String) async {
        guard let c = connections[connection] else { return }
        guard let account = c.account, c.rooms.contains(roomId), let shard = rooms[roomId]?.shard else {
            c.send(EventFrame.error(id: id, .cluster(RoomErrorCode.notEntered.rawValue, "not in the room")))
            return
        }
        let identity = SessionIdentity(userId: account.userId, authMode: account.mode, sessionId: c.sessionId,
                                       edgeId: cluster.edgeId)
        rooms[roomId]?.sessions[connection]?.exiting = true
        let outcome: ApplyOutcome
        do {
            outcome = try await cluster.submit(.exit(roomId: roomId), shard: shard, actor: .session(identity))
        } catch {
            rooms[roomId]?.sessions[connection]?.exiting = false
            connections[connection]?.send(EventFrame.error(id: id, ProtocolError.from(error)))
            return
        }
        guard let c = connections[connection] else { return }
        switch outcome.result {
        case .failure(let e):
            rooms[roomId]?.sessions[connection]?.exiting = false
            c.send(EventFrame.error(id: id, ProtocolError.from(e)))
        case .success(let reply):
            c.send(EventFrame.answer(id: id) { j in Self.writeReply(reply, into: &j) })
            for event in outcome.events where event.roomId == roomId {
                if case .sessions(let ids) = event.audience, ids.contains(c.sessionId) {
                    c.send(EventFrame.encode(event))
                }
            }
            leave(connection, roomId: roomId)
        }
    }

    /// The cluster no longer holds this session (its edge lease ran out and the `lost` status did not reach
    /// this connection, or has not yet): the client hears that it is out before the refusal, and the edge
    /// forgets the session (issue 16: never a bare 13100 for a room the client believes in).
    func lost(_ connection: UInt64, id: Int64, roomId: String, _ refusal: RoomError) {
        guard let c = connections[connection] else { return }
        c.send(EventFrame.encode(RoomEvent(roomId: roomId, seq: 0, audience: .sessions([c.sessionId]),
                                           kind: .status(.lost))))
        c.send(EventFrame.error(id: id, ProtocolError.from(refusal)))
        leave(connection, roomId: roomId)
    }

    /// The answer `data` of a room command's reply.
    static func writeReply(_ reply: RoomReply, into j: inout JSONText) {
        j.beginObject()
        switch reply {
        case .done, .sessionsEnded:
            break
        case .roomInfo(let view):
            j.key("room"); j.room(view)
        case .entered(let result):
            j.key("room"); j.room(result.room)
            j.key("member"); j.member(result.member)
        case .messageSent(let seq, let time, let serverId):
            j.field("seq", seq)
            j.field("time", time)
            j.field("serverId", serverId)
        case .members(let list):
            j.key("members"); j.members(list)
        case .queueElement(let e):
            j.key("element"); j.queueEntry(e)
        case .queue(let list):
            j.key("elements"); j.queueEntries(list)
        case .keysNotFound(let keys):
            j.field("notFound", strings: keys)
        case .history(let items):
            j.key("messages"); j.historyItems(items)
        case .roomIds(let ids):
            j.field("roomIds", strings: ids)  // app-server only; no client op asks for it
        }
        j.endObject()
    }

    /// Forgets the connection's session in the room (exit answered, kicked) and stops the shard's feed when
    /// it was the last local session there.
    func leave(_ connection: UInt64, roomId: String) {
        if let c = connections[connection], let account = c.account, c.slots.contains(roomId) {
            connections[connection]?.slots.remove(roomId)
            releaseSlot(SessionIdentity(userId: account.userId, authMode: account.mode, sessionId: c.sessionId,
                                        edgeId: cluster.edgeId), roomId: roomId)
        }
        connections[connection]?.rooms.remove(roomId)
        rooms[roomId]?.sessions[connection] = nil
        release(rooms: [roomId])
        updateGauges()
    }

    /// E3: the user's room slots live on their home shard, across every shard's rooms.
    nonisolated func homeShard(of userId: String) -> ShardID {
        cluster.shard(ofRoom: RoomSlots.homeKey(userId))
    }

    /// E3: frees the session's room slot after it left the room. Retried a few times: a slot left behind
    /// would count against the user until this edge's sessions are ended with its lease.
    func releaseSlot(_ identity: SessionIdentity, roomId: String) {
        let cluster = self.cluster
        let home = homeShard(of: identity.userId)
        Task {
            for attempt in 0..<3 {
                if attempt > 0 { try? await Task.sleep(for: .milliseconds(200 << attempt)) }
                if (try? await cluster.submit(.releaseRoomSlot(roomId: roomId), shard: home, actor: .session(identity))) != nil {
                    break
                }
            }
            self.slotHolds[home, default: 1] -= 1
            if self.slotHolds[home]! <= 0 { self.slotHolds[home] = nil }
            self.release(rooms: [])
        }
    }

    /// Drops the local state of rooms without sessions, and the feeds of shards without rooms.
    func release(rooms ids: [String]) {
        for id in ids {
            if let room = rooms[id], room.sessions.isEmpty { rooms[id] = nil }
        }
        let busy = Set(rooms.values.map(\.shard)).union(slotHolds.keys).union(imHolds.keys)
        for (shard, feed) in feeds where !busy.contains(shard) {
            feed.stop()
            feeds[shard] = nil
        }
    }
}
