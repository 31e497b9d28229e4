/// All rooms of one shard as a pure, deterministic state machine: `apply` reads time only from
/// the context, never iterates unordered collections where order could show, and changes
/// nothing when it fails.
public struct RoomsState: Sendable {
    public internal(set) var limits: RoomLimits
    public internal(set) var policy: AppPolicy
    var rooms: [String: Room] = [:]
    /// E3: for each online user, the rooms (sorted ids) where they have a session.
    var userRooms: [String: [String]] = [:]
    /// M9: global mute expiry (ms, Int64.max = permanent) by user.
    var globalMutes: [String: Int64] = [:]

    public init(limits: RoomLimits = RoomLimits(), policy: AppPolicy = AppPolicy()) {
        self.limits = limits
        self.policy = policy
    }

    /// The ids of every room, sorted.
    public var roomIds: [String] { rooms.keys.sorted() }

    /// Applies one command; on failure the state is unchanged and there are no events.
    public mutating func apply(_ command: RoomCommand, context: ApplyContext) -> ApplyOutcome {
        let env = ApplyEnv(context: context, limits: limits, policy: policy)
        var fx = ApplyEffects()
        do {
            let reply = try dispatch(command, env, &fx)
            return ApplyOutcome(result: .success(reply), events: fx.events)
        } catch {
            return ApplyOutcome(result: .failure(error), events: [])
        }
    }

    private mutating func dispatch(_ command: RoomCommand, _ env: ApplyEnv, _ fx: inout ApplyEffects)
        throws(RoomError) -> RoomReply {
        switch command {
        case .sendMessage(let m):
            try requireOpenRoom(m.roomId)
            let muteEnd = globalMutes.isEmpty ? nil : globalMutes[env.context.actorUserId]
            return try rooms[m.roomId]!.send(m, globalMuteEnd: muteEnd, env, &fx)
        case .createRoom(let c):
            try createRoom(c, env)
        case .updateRoom(let u):
            try requireOpenRoom(u.roomId)
            try rooms[u.roomId]!.update(u, env, &fx)
        case .closeRoom(let roomId, let ext):
            try requireAppServer(env)
            try FieldCheck.size(ext, limits.maxNotifyExtBytes, "ext")
            try requireOpenRoom(roomId)
            rooms[roomId]!.close(ext: ext, env, &fx)
            syncPresence(roomId, fx)
        case .reopenRoom(let roomId):
            try requireAppServer(env)
            guard rooms[roomId] != nil else { throw Self.noRoom }
            guard !rooms[roomId]!.info.isOpen else { throw RoomError(.alreadyInState, "the room is open") }
            rooms[roomId]!.info.isOpen = true
        case .setRoomPolicy(let p):
            try requireAppServer(env)
            guard rooms[p.roomId] != nil else { throw Self.noRoom }
            rooms[p.roomId]!.info.enterExitNotifications = p.enterExitNotifications
            rooms[p.roomId]!.info.devicePolicy = p.devicePolicy
        case .setAppPolicy(let p):
            try requireAppServer(env)
            policy = p
        case .fetchRoomInfo(let roomId):
            guard let room = rooms[roomId] else { throw Self.noRoom }
            if case .session = env.context.actor {
                guard room.info.isOpen else { throw Self.closed }
                _ = try room.resolveOperator(env)
            }
            return .roomInfo(room.view)
        case .enter(let e):
            return try enter(e, env, &fx)
        case .exit(let roomId):
            try requireOpenRoom(roomId)
            let op = try rooms[roomId]!.resolveOperator(env)
            guard let session = op.session else { throw RoomError(.noPermission, "only a session exits") }
            rooms[roomId]!.endSession(session.sessionId, .exit, env, &fx)
            syncPresence(roomId, fx)
        case .sessionLost(let edgeId):
            try requireAppServer(env)
            try FieldCheck.id(edgeId, limits.maxIdBytes, "edgeId")
            return .sessionsEnded(endSessions(onEdge: edgeId, env, &fx))
        case .fetchHistory(let q):
            try requireOpenRoom(q.roomId)
            return .history(try rooms[q.roomId]!.historyPage(q, env))
        case .fetchMembers(let q):
            try requireOpenRoom(q.roomId)
            return .members(try rooms[q.roomId]!.memberPage(q, env))
        case .fetchMembersByIds(let q):
            try requireOpenRoom(q.roomId)
            return .members(try rooms[q.roomId]!.membersByIds(q, env))
        case .updateMyMemberInfo(let u):
            try requireOpenRoom(u.roomId)
            try rooms[u.roomId]!.updateMyInfo(u, env, &fx)
        case .markManager(let u):
            try requireOpenRoom(u.roomId)
            try rooms[u.roomId]!.markManager(u, env, &fx)
        case .markCommon(let u):
            try requireOpenRoom(u.roomId)
            try rooms[u.roomId]!.markCommon(u, env, &fx)
        case .setBlocked(let u):
            try requireOpenRoom(u.roomId)
            try rooms[u.roomId]!.setBlocked(u, env, &fx)
            syncPresence(u.roomId, fx)
        case .setMuted(let u):
            try requireOpenRoom(u.roomId)
            try rooms[u.roomId]!.setMuted(u, env, &fx)
        case .setTempMute(let u):
            try requireOpenRoom(u.roomId)
            try rooms[u.roomId]!.setTempMute(u, env, &fx)
        case .kick(let u):
            try requireOpenRoom(u.roomId)
            try rooms[u.roomId]!.kick(u, env, &fx)
            syncPresence(u.roomId, fx)
        case .setRoomMute(let s):
            try requireOpenRoom(s.roomId)
            try rooms[s.roomId]!.setRoomMute(s, env, &fx)
        case .updateAllowlist(let s):
            try requireOpenRoom(s.roomId)
            try rooms[s.roomId]!.updateAllowlist(s, env, &fx)
        case .setGlobalMute(let g):
            try setGlobalMute(g, env, &fx)
        case .queueInit(let roomId, let size):
            try requireAppServer(env)
            try requireOpenRoom(roomId)
            try rooms[roomId]!.initQueue(maxSize: size, env)
        case .queueOffer(let o):
            try requireOpenRoom(o.roomId)
            try rooms[o.roomId]!.offer(o, env, &fx)
        case .queueBatchUpdate(let b):
            try requireOpenRoom(b.roomId)
            return try rooms[b.roomId]!.batchUpdate(b, env, &fx)
        case .queuePoll(let roomId, let key):
            try requireOpenRoom(roomId)
            return try rooms[roomId]!.poll(key: key, env, &fx)
        case .queueList(let roomId):
            try requireOpenRoom(roomId)
            _ = try rooms[roomId]!.resolveOperator(env)
            return .queue(rooms[roomId]!.queueEntries)
        case .queueDrop(let roomId):
            try requireOpenRoom(roomId)
            try rooms[roomId]!.drop(env, &fx)
        }
        return .done
    }

    static let noRoom = RoomError(.roomNotFound, "no such room")
    static let closed = RoomError(.roomClosed, "the room is closed")

    private func requireOpenRoom(_ roomId: String) throws(RoomError) {
        guard let room = rooms[roomId] else { throw Self.noRoom }
        guard room.info.isOpen else { throw Self.closed }
    }

    private func requireAppServer(_ env: ApplyEnv) throws(RoomError) {
        guard case .appServer = env.context.actor else {
            throw RoomError(.noPermission, "only the app server may do this")
        }
    }

    /// R1 / R2: rooms are created only through the server API.
    private mutating func createRoom(_ c: CreateRoom, _ env: ApplyEnv) throws(RoomError) {
        try requireAppServer(env)
        try FieldCheck.id(c.roomId, limits.maxIdBytes, "roomId")
        try FieldCheck.id(c.creator, limits.maxIdBytes, "creator")
        try FieldCheck.id(c.name, limits.maxRoomNameBytes, "name")
        try FieldCheck.size(c.announcement, limits.maxAnnouncementBytes, "announcement")
        try FieldCheck.size(c.ext, limits.maxRoomExtBytes, "ext")
        try FieldCheck.size(c.broadcastUrl, limits.maxBroadcastUrlBytes, "broadcastUrl")
        guard rooms[c.roomId] == nil else { throw RoomError(.alreadyInState, "the room exists") }
        var room = Room(info: RoomInfo(
            roomId: c.roomId, name: c.name, announcement: c.announcement, creator: c.creator, ext: c.ext,
            broadcastUrl: c.broadcastUrl, queueModificationLevel: c.queueModificationLevel),
            queueMaxSize: limits.maxQueueSize)
        room.ensureMember(c.creator)
        room.members[c.creator]!.role = .creator
        rooms[c.roomId] = room
    }

    /// E1 / E3 / E5 / E7: validate everything first, then (RC one-room policy) leave other rooms, then enter.
    private mutating func enter(_ e: EnterRoom, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError)
        -> RoomReply {
        guard case .session(let identity) = env.context.actor else {
            throw RoomError(.noPermission, "only a client session enters")
        }
        try requireOpenRoom(e.roomId)
        try rooms[e.roomId]!.validateEnter(e, identity, env)
        let current = userRooms[identity.userId] ?? []
        let alreadyHere = current.contains(e.roomId)
        var leave: [String] = []
        if !alreadyHere {
            if policy.oneRoomPerUser {
                leave = current
            } else if current.count >= limits.maxRoomsPerUser {
                throw RoomError(.tooManyRooms, "the user is already in \(limits.maxRoomsPerUser) rooms")
            }
        }
        for roomId in leave {
            // RC: the previous room's sessions are kicked, the user's devices told (reason 2).
            var roomFx = ApplyEffects()
            rooms[roomId]!.kickUser(identity.userId, .byConflictLogin, ext: "", env, &roomFx)
            rooms[roomId]!.emit(.multiLoginSync(joined: false, reason: 2, time: env.now),
                                to: .users([identity.userId]), &roomFx)
            syncPresence(roomId, roomFx)
            fx.events.append(contentsOf: roomFx.events)
        }
        let reply = rooms[e.roomId]!.enter(e, identity, env, &fx)
        syncPresence(e.roomId, fx)
        return reply
    }

    /// Ends every session of a lost edge, room by room in id order.
    private mutating func endSessions(onEdge edgeId: String, _ env: ApplyEnv, _ fx: inout ApplyEffects) -> Int {
        var ended = 0
        for roomId in rooms.keys.sorted() {
            let sids = rooms[roomId]!.sessions.values.filter { $0.edgeId == edgeId }.map(\.sessionId).sorted()
            guard !sids.isEmpty else { continue }
            var roomFx = ApplyEffects()
            for sid in sids { rooms[roomId]!.endSession(sid, .lost, env, &roomFx) }
            syncPresence(roomId, roomFx)
            fx.events.append(contentsOf: roomFx.events)
            ended += sids.count
        }
        return ended
    }

    /// M9: global mute across the shard's rooms (app server); RC ban events to the user in each room.
    private mutating func setGlobalMute(_ g: GlobalMute, _ env: ApplyEnv, _ fx: inout ApplyEffects)
        throws(RoomError) {
        try requireAppServer(env)
        try FieldCheck.id(g.userId, limits.maxIdBytes, "userId")
        try FieldCheck.size(g.extra, limits.maxNotifyExtBytes, "extra")
        guard g.minutes <= UInt64(limits.maxBanMinutes) else {
            throw RoomError(.badParameter, "global mute exceeds \(limits.maxBanMinutes) minutes")
        }
        let millis = Int64(g.minutes) * 60_000
        if g.enable {
            globalMutes[g.userId] = g.minutes == 0 ? Int64.max : env.now + millis
        } else {
            guard g.minutes == 0 else { throw RoomError(.badParameter, "unmute takes no duration") }
            guard let end = globalMutes[g.userId], end > env.now else {
                throw RoomError(.alreadyInState, "the user is not globally muted")
            }
            globalMutes[g.userId] = nil
        }
        for roomId in userRooms[g.userId] ?? [] {
            rooms[roomId]!.emit(.ban(g.enable ? .globalMute : .globalUnmute, durationMillis: g.enable ? millis : 0,
                                     operateTime: env.now, userIds: [g.userId], extra: g.extra),
                                to: .users([g.userId]), &fx)
        }
    }

    /// E3: keeps the user-to-rooms index in step with who came online or went offline.
    private mutating func syncPresence(_ roomId: String, _ fx: ApplyEffects) {
        for u in fx.offline {
            userRooms[u]?.removeAll { $0 == roomId }
            if userRooms[u]?.isEmpty == true { userRooms[u] = nil }
        }
        for u in fx.online {
            var list = userRooms.removeValue(forKey: u) ?? []
            let at = list.firstIndex { $0 > roomId } ?? list.count
            list.insert(roomId, at: at)
            userRooms[u] = list
        }
    }
}
