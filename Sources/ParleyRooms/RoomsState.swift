/// All rooms of one shard as a pure, deterministic state machine: `apply` reads time only from
/// the context, never iterates unordered collections where order could show, and changes
/// nothing when it fails.
public struct RoomsState: Sendable {
    public internal(set) var limits: RoomLimits
    /// The policy of every namespace without its own (`AppScope`).
    public internal(set) var policy: AppPolicy
    /// A8: each app's own policy, by namespace.
    public internal(set) var appPolicies: [String: AppPolicy] = [:]
    /// A1: each app's message budgets (by namespace); apps without one have `SendBudget()`.
    public internal(set) var sendBudgets: [String: SendBudget] = [:]
    var rooms = RoomTable()
    /// E3: for each online user, the rooms (sorted ids) where they have a session.
    var userRooms: [String: [String]] = [:]
    /// M9: global mute expiry (ms, Int64.max = permanent) by user.
    var globalMutes: [String: Int64] = [:]
    /// E3 across shards: room slots of the users whose home shard this is.
    var slots: [String: [RoomSlot]] = [:]
    /// SPEC D1: the bytes all rooms' recent-history windows may hold together (0: no bound but each room's
    /// count and retention), replicated (`setHistoryWindow`); and what is derived of the windows.
    public internal(set) var historyWindowBytes = 0
    var window = RoomWindows()
    /// History items added since the last `takeStoredHistory()`: scratch, not state (never in a snapshot).
    private var stored: [StoredHistoryItem] = []
    /// Whether to collect `takeStoredHistory()` items (a node with a durable history store turns it on).
    public var collectsStoredHistory = false
    /// W2: what the last applied command did that an app server hears of (scratch, never in a snapshot).
    private var activity: [RoomActivity] = []
    /// Whether to collect `takeActivity()` (the shard does while an app wants after-event callbacks).
    public var collectsActivity = false

    /// An empty shard. Limits must be valid (`RoomLimits.isValid`); a bad configuration stops here.
    public init(limits: RoomLimits = RoomLimits(), policy: AppPolicy = AppPolicy()) {
        precondition(limits.isValid, "RoomLimits out of range: \(limits)")
        self.limits = limits
        self.policy = policy
    }

    /// The ids of every room, sorted.
    public var roomIds: [String] { rooms.ids }

    /// N5: the history items applied commands added since the last call, in apply order (the node writes
    /// them to its durable history store, which keeps what the in-memory window no longer holds).
    public mutating func takeStoredHistory() -> [StoredHistoryItem] {
        defer { stored.removeAll(keepingCapacity: true) }
        return stored
    }

    /// W2: what the commands applied since the last call did that an app server hears of, in apply order.
    public mutating func takeActivity() -> [RoomActivity] {
        defer { activity.removeAll(keepingCapacity: true) }
        return activity
    }

    /// N5 / X2: what the in-memory history of a room still holds: its oldest seq (nil when empty) and the
    /// newest seq it dropped (0 = none), so a query can tell when it must read further back.
    public func historyWindow(roomId: String) -> (oldestSeq: UInt64?, droppedThroughSeq: UInt64)? {
        rooms[roomId].map { ($0.history.first?.seq, $0.droppedThroughSeq) }
    }

    /// The edges that hold at least one online session in this shard, sorted (the leader watches their leases).
    public var edgesWithSessions: [String] {
        var edges = Set<String>()
        for room in rooms.slots { for s in room.sessions.values { edges.insert(s.edgeId) } }
        for held in slots.values { for s in held { edges.insert(s.edgeId) } }
        return edges.sorted()
    }

    /// The bounds `setHistoryWindow` accepts besides 0.
    public static let historyWindowRange = (64 << 10) ... (1 << 40)

    /// How many rooms the shard holds (cheaper than `roomIds.count`).
    public var roomCount: Int { rooms.count }

    /// Applies one command; on failure the state is unchanged and there are no events.
    public mutating func apply(_ command: RoomCommand, context: ApplyContext) -> ApplyOutcome {
        // Expiry arithmetic adds durations to the entry time; a forged time must not overflow.
        guard (0 ... Self.latestTimestamp).contains(context.timestamp) else {
            return ApplyOutcome(result: .failure(RoomError(.badParameter, "entry timestamp out of range")), events: [])
        }
        // Not `roomId.map(policy(forRoom:))`: a method reference captures a copy of the whole state (issue 35).
        let roomPolicy: AppPolicy
        if let roomId = command.roomId { roomPolicy = policy(forRoom: roomId) } else { roomPolicy = policy }
        let env = ApplyEnv(context: context, limits: limits, policy: roomPolicy)
        var fx = ApplyEffects()
        fx.collectsActivity = collectsActivity
        do {
            let reply = try dispatch(command, env, &fx)
            if fx.windowBytes != 0 || !fx.newWindowHeads.isEmpty { settleWindows(fx) }
            if collectsStoredHistory && !fx.stored.isEmpty { stored += fx.stored }
            if !fx.activity.isEmpty { activity += fx.activity }
            return ApplyOutcome(result: .success(reply), events: fx.events)
        } catch {
            return ApplyOutcome(result: .failure(error), events: [])
        }
    }

    private mutating func dispatch(_ command: RoomCommand, _ env: ApplyEnv, _ fx: inout ApplyEffects)
        throws(RoomError) -> RoomReply {
        switch command {
        case .sendMessage(let m):
            let i = try openSlot(m.roomId)
            let muteEnd = globalMutes.isEmpty ? nil : globalMutes[AppScope.user(env.context.actorUserId, ofRoom: m.roomId)]
            return try rooms[slot: i].send(m, globalMuteEnd: muteEnd, env, &fx)
        case .createRoom(let c):
            try createRoom(c, env)
            fx.record(.created(roomId: c.roomId, creator: c.creator))
        case .updateRoom(let u):
            let i = try openSlot(u.roomId)
            try rooms[slot: i].update(u, env, &fx)
        case .closeRoom(let roomId, let ext):
            try requireAppServer(env)
            try FieldCheck.size(ext, limits.maxNotifyExtBytes, "ext")
            let i = try openSlot(roomId)
            rooms[slot: i].close(ext: ext, env, &fx)
            syncPresence(roomId, fx)
        case .reopenRoom(let roomId):
            try requireAppServer(env)
            let i = try slot(roomId)
            guard !rooms[slot: i].info.isOpen else { throw RoomError(.alreadyInState, "the room is open") }
            rooms[slot: i].info.isOpen = true
        case .setRoomPolicy(let p):
            try requireAppServer(env)
            let i = try slot(p.roomId)
            rooms[slot: i].info.enterExitNotifications = p.enterExitNotifications
            rooms[slot: i].info.devicePolicy = p.devicePolicy
        case .setAppPolicy(let p):
            try requireAppServer(env)
            policy = p
        case .setScopedAppPolicy(let namespace, let p):
            try requireAppServer(env)
            guard namespace.utf8.count <= limits.maxIdBytes, AppScope.isLocal(namespace) else {
                throw RoomError(.badParameter, "bad namespace")
            }
            appPolicies[namespace] = p
        case .setSendBudget(let namespace, let budget):
            try requireAppServer(env)
            guard namespace.utf8.count <= limits.maxIdBytes, AppScope.isLocal(namespace) else {
                throw RoomError(.badParameter, "bad namespace")
            }
            guard budget.isValid else {
                throw RoomError(.badParameter, "send rates must be 1-1000000 a second, each burst at least its rate")
            }
            sendBudgets[namespace] = budget
        case .setHistoryWindow(let bytes):
            try requireAppServer(env)
            guard bytes == 0 || (Self.historyWindowRange).contains(bytes) else {
                throw RoomError(.badParameter, "a history window is 0 (none) or 64 KiB … 1 TiB")
            }
            setHistoryWindow(bytes: bytes)
        case .fetchRoomInfo(let roomId):
            let i = try slot(roomId)
            if case .session = env.context.actor {
                guard rooms[slot: i].info.isOpen else { throw Self.closed }
                _ = try rooms[slot: i].resolveOperator(env)
            }
            return .roomInfo(rooms[slot: i].view)
        case .listRooms(let after, let limit):
            try requireAppServer(env)
            guard (1...1000).contains(limit) else { throw RoomError(.badParameter, "limit must be 1 … 1000") }
            return .roomIds(Array(rooms.ids.lazy.filter { $0 > after }.prefix(limit)))
        case .enter(let e):
            return try enter(e, env, &fx)
        case .exit(let roomId):
            let i = try openSlot(roomId)
            let op = try rooms[slot: i].resolveOperator(env)
            guard let session = op.session else { throw RoomError(.noPermission, "only a session exits") }
            rooms[slot: i].endSession(session.sessionId, .exit, env, &fx)
            syncPresence(roomId, fx)
        case .sessionLost(let edgeId):
            try requireAppServer(env)
            try FieldCheck.id(edgeId, limits.maxIdBytes, "edgeId")
            if !slots.isEmpty { releaseSlots(onEdge: edgeId) }
            return .sessionsEnded(endSessions(onEdge: edgeId, env, &fx))
        case .fetchHistory(let q):
            let i = try openSlot(q.roomId)
            return .history(try rooms[slot: i].historyPage(q, env))
        case .historySince(let roomId, let after, let limit):
            let i = try openSlot(roomId)
            return .history(try rooms[slot: i].history(after: after, limit: limit, env))
        case .fetchMembers(let q):
            let i = try openSlot(q.roomId)
            return .members(try rooms[slot: i].memberPage(q, env))
        case .fetchMembersByIds(let q):
            let i = try openSlot(q.roomId)
            return .members(try rooms[slot: i].membersByIds(q, env))
        case .updateMyMemberInfo(let u):
            let i = try openSlot(u.roomId)
            try rooms[slot: i].updateMyInfo(u, env, &fx)
        case .markManager(let u):
            let i = try openSlot(u.roomId)
            try rooms[slot: i].markManager(u, env, &fx)
        case .markCommon(let u):
            let i = try openSlot(u.roomId)
            try rooms[slot: i].markCommon(u, env, &fx)
        case .setBlocked(let u):
            let i = try openSlot(u.roomId)
            try rooms[slot: i].setBlocked(u, env, &fx)
            syncPresence(u.roomId, fx)
        case .setMuted(let u):
            let i = try openSlot(u.roomId)
            try rooms[slot: i].setMuted(u, env, &fx)
        case .setTempMute(let u):
            let i = try openSlot(u.roomId)
            try rooms[slot: i].setTempMute(u, env, &fx)
        case .kick(let u):
            let i = try openSlot(u.roomId)
            try rooms[slot: i].kick(u, env, &fx)
            syncPresence(u.roomId, fx)
        case .setRoomMute(let s):
            let i = try openSlot(s.roomId)
            try rooms[slot: i].setRoomMute(s, env, &fx)
        case .updateAllowlist(let s):
            let i = try openSlot(s.roomId)
            try rooms[slot: i].updateAllowlist(s, env, &fx)
        case .setGlobalMute(let g):
            try setGlobalMute(g, env, &fx)
        case .claimRoomSlot(let roomId):
            if let others = try claimSlot(roomId, env) { return .roomIds(others) }
        case .yieldRoom(let roomId):
            guard case .session(let identity) = env.context.actor else {
                throw RoomError(.noPermission, "only a client session yields a room")
            }
            guard policy(forRoom: roomId).oneRoomPerUser else { throw RoomError(.noPermission, "the one-room policy is off") }
            try FieldCheck.roomId(roomId, limits)
            if rooms.slot(of: roomId) != nil, userRooms[AppScope.user(identity.userId, ofRoom: roomId)]?.contains(roomId) == true {
                leaveForAnotherRoom(roomId, userId: identity.userId, env, &fx)
            }
        case .releaseRoomSlot(let roomId):
            try releaseSlot(roomId, env)
        case .queueInit(let roomId, let size):
            try requireAppServer(env)
            let i = try openSlot(roomId)
            try rooms[slot: i].initQueue(maxSize: size, env)
        case .queueOffer(let o):
            let i = try openSlot(o.roomId)
            try rooms[slot: i].offer(o, env, &fx)
        case .queueBatchUpdate(let b):
            let i = try openSlot(b.roomId)
            return try rooms[slot: i].batchUpdate(b, env, &fx)
        case .queuePoll(let roomId, let key):
            let i = try openSlot(roomId)
            return try rooms[slot: i].poll(key: key, env, &fx)
        case .queueList(let roomId):
            let i = try openSlot(roomId)
            _ = try rooms[slot: i].resolveOperator(env)
            return .queue(rooms[slot: i].queueEntries)
        case .queueDrop(let roomId):
            let i = try openSlot(roomId)
            try rooms[slot: i].drop(env, &fx)
        }
        return .done
    }

    /// The last millisecond of the year 9999: later entry times are refused.
    public static let latestTimestamp: Int64 = 253_402_300_799_999

    static let noRoom = RoomError(.roomNotFound, "no such room")
    static let closed = RoomError(.roomClosed, "the room is closed")

    private func slot(_ roomId: String) throws(RoomError) -> Int {
        guard let i = rooms.slot(of: roomId) else { throw Self.noRoom }
        return i
    }

    private func openSlot(_ roomId: String) throws(RoomError) -> Int {
        let i = try slot(roomId)
        guard rooms[slot: i].info.isOpen else { throw Self.closed }
        return i
    }

    /// The policy a room runs under: its app's own, or the shared one.
    public func policy(forRoom roomId: String) -> AppPolicy {
        appPolicies.isEmpty ? policy : appPolicies[AppScope.namespace(of: roomId)] ?? policy
    }

    /// A1: the message budget of a room's app.
    public func sendBudget(forRoom roomId: String) -> SendBudget { Self.sendBudget(forRoom: roomId, in: sendBudgets) }

    /// The same from the budgets alone, for a caller holding the state inside a class (the shard leader's check
    /// before each message): calling the method there copied the whole state first (issue 35).
    public static func sendBudget(forRoom roomId: String, in budgets: [String: SendBudget]) -> SendBudget {
        budgets.isEmpty ? SendBudget() : budgets[AppScope.namespace(of: roomId)] ?? SendBudget()
    }

    private func requireAppServer(_ env: ApplyEnv) throws(RoomError) {
        guard case .appServer = env.context.actor else {
            throw RoomError(.noPermission, "only the app server may do this")
        }
    }

    /// R1 / R2: rooms are created only through the server API.
    private mutating func createRoom(_ c: CreateRoom, _ env: ApplyEnv) throws(RoomError) {
        try requireAppServer(env)
        try FieldCheck.roomId(c.roomId, limits)
        try FieldCheck.id(c.creator, limits.maxIdBytes, "creator")
        try FieldCheck.id(c.name, limits.maxRoomNameBytes, "name")
        try FieldCheck.size(c.announcement, limits.maxAnnouncementBytes, "announcement")
        try FieldCheck.size(c.ext, limits.maxRoomExtBytes, "ext")
        try FieldCheck.size(c.broadcastUrl, limits.maxBroadcastUrlBytes, "broadcastUrl")
        guard rooms.slot(of: c.roomId) == nil else { throw RoomError(.alreadyInState, "the room exists") }
        var room = Room(info: RoomInfo(
            roomId: c.roomId, name: c.name, announcement: c.announcement, creator: c.creator, ext: c.ext,
            broadcastUrl: c.broadcastUrl, queueModificationLevel: c.queueModificationLevel),
            queueMaxSize: limits.maxQueueSize)
        room.ensureMember(c.creator)
        room.members[c.creator]!.role = .creator
        rooms.insert(room)
    }

    /// E1 / E3 / E5 / E7: validate everything first, then (RC one-room policy) leave other rooms, then enter.
    private mutating func enter(_ e: EnterRoom, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError)
        -> RoomReply {
        guard case .session(let identity) = env.context.actor else {
            throw RoomError(.noPermission, "only a client session enters")
        }
        let i = try openSlot(e.roomId)
        try rooms[slot: i].validateEnter(e, identity, env)
        let current = userRooms[AppScope.user(identity.userId, ofRoom: e.roomId)] ?? []
        let alreadyHere = current.contains(e.roomId)
        var leave: [String] = []
        if !alreadyHere {
            if env.policy.oneRoomPerUser {
                leave = current
            } else if current.count >= limits.maxRoomsPerUser {
                throw RoomError(.tooManyRooms, "the user is already in \(limits.maxRoomsPerUser) rooms")
            }
        }
        for roomId in leave {
            leaveForAnotherRoom(roomId, userId: identity.userId, env, &fx)
        }
        let reply = rooms[slot: i].enter(e, identity, env, &fx)
        syncPresence(e.roomId, fx)
        return reply
    }

    /// RC one-room policy: the user's sessions in `roomId` are kicked (reason 3) and the user's devices told
    /// (multi-login sync leave, reason 2).
    private mutating func leaveForAnotherRoom(_ roomId: String, userId: String, _ env: ApplyEnv,
                                              _ fx: inout ApplyEffects) {
        let other = rooms.slot(of: roomId)!
        var roomFx = ApplyEffects()
        rooms[slot: other].kickUser(userId, .byConflictLogin, ext: "", env, &roomFx)
        rooms[slot: other].emit(.multiLoginSync(joined: false, reason: 2, time: env.now), to: .users([userId]), &roomFx)
        syncPresence(roomId, roomFx)
        fx.events.append(contentsOf: roomFx.events)
    }

    /// Ends every session of a lost edge, room by room in id order.
    private mutating func endSessions(onEdge edgeId: String, _ env: ApplyEnv, _ fx: inout ApplyEffects) -> Int {
        var ended = 0
        for roomId in rooms.ids {
            let i = rooms.slot(of: roomId)!
            let sids = rooms[slot: i].sessions.values.filter { $0.edgeId == edgeId }.map(\.sessionId).sorted()
            guard !sids.isEmpty else { continue }
            var roomFx = ApplyEffects()
            for sid in sids { rooms[slot: i].endSession(sid, .lost, env, &roomFx) }
            // Q3: one PartClear per room for everyone the lost edge took offline; the cluster is the source.
            rooms[slot: i].removeTransientItems(ownedBy: Set(roomFx.offline), by: .appServer, env, &roomFx)
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
        // `userId` is the account in its app's namespace (`AppScope.user`), as the server API sends it.
        let account = AppScope.local(g.userId)
        try FieldCheck.id(account, limits.maxIdBytes, "userId")
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
            rooms[slot: rooms.slot(of: roomId)!].emit(.ban(g.enable ? .globalMute : .globalUnmute, durationMillis: g.enable ? millis : 0,
                                     operateTime: env.now, userIds: [account], extra: g.extra),
                                to: .users([account]), &fx)
        }
    }

    /// E3: keeps the user-to-rooms index in step with who came online or went offline.
    private mutating func syncPresence(_ roomId: String, _ fx: ApplyEffects) {
        for account in fx.offline {
            let u = AppScope.user(account, ofRoom: roomId)
            userRooms[u]?.removeAll { $0 == roomId }
            if userRooms[u]?.isEmpty == true { userRooms[u] = nil }
        }
        for account in fx.online {
            let u = AppScope.user(account, ofRoom: roomId)
            var list = userRooms.removeValue(forKey: u) ?? []
            let at = list.firstIndex { $0 > roomId } ?? list.count
            list.insert(roomId, at: at)
            userRooms[u] = list
        }
    }
}
