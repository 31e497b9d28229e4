import Collections

/// All state of one room: info, members, online sessions, restrictions, queue and history.
/// Mutated in place inside `RoomsState.rooms` (never copied out and written back).
struct Room: Sendable {
    var info: RoomInfo
    /// X2: the last sequence number given to a room-wide event.
    var seq: UInt64 = 0
    /// M4: next paging key for a new member record.
    var nextPageKey: UInt64 = 1
    /// Every fixed member and every online visitor (M1).
    var members: [String: RoomMember] = [:]
    /// Online sessions by session id (E1).
    var sessions: [String: RoomSession] = [:]
    /// Each online user's session ids, oldest first (E7 kicks the older ones).
    var userSessions: [String: [String]] = [:]
    /// M8: temporary mute expiry (ms) by user.
    var tempMutes: [String: Int64] = [:]
    /// R6: users who may speak during room-wide mute.
    var allowlist: Set<String> = []
    /// Q1: the ordered queue.
    var queue: OrderedDictionary<String, QueueItem> = [:]
    var queueMaxSize: Int
    /// N5: messages and notifications, oldest first.
    var history: Deque<HistoryItem> = []
    /// X2: the highest seq ever dropped from history (retention or cap): a resume from before it has a gap.
    var droppedThroughSeq: UInt64 = 0
    /// Resend de-duplication: the seq of each message in history that has a clientMessageId, by sender and
    /// id. Derived from history (rebuilt on restore), so it holds exactly what history holds.
    var sentMessages: [SentKey: UInt64] = [:]
    /// SPEC D1: the estimated bytes of `history` (`HistoryItem.estimatedBytes`); derived, never in a snapshot.
    var historyBytes = 0

    init(info: RoomInfo, queueMaxSize: Int) {
        self.info = info
        self.queueMaxSize = queueMaxSize
    }

    /// R1: distinct users with at least one online session.
    var onlineUserCount: Int { userSessions.count }

    var view: RoomInfoView { RoomInfoView(info: info, onlineUserCount: onlineUserCount, seq: seq) }

    var fixedMemberCount: Int { members.values.reduce(0) { $0 + ($1.isFixed ? 1 : 0) } }

    func enterExitEnabled(_ env: ApplyEnv) -> Bool {
        info.enterExitNotifications ?? env.policy.enterExitNotifications
    }

    func isOnline(_ userId: String) -> Bool { userSessions[userId] != nil }

    func nickname(of userId: String) -> String { members[userId]?.nickname ?? "" }

    func notificationMember(_ userId: String) -> NotificationMember {
        NotificationMember(userId: userId, nickname: nickname(of: userId))
    }

    /// M3: the client-visible record, with the remaining temp mute computed from the entry time.
    func memberView(_ m: RoomMember, now: Int64) -> MemberView {
        let muteEnd = tempMutes[m.userId] ?? 0
        // Rounded up to whole seconds; written so no stored expiry can overflow it.
        let left = muteEnd > now ? UInt64(muteEnd - now) : 0
        let remaining = left / 1000 + (left % 1000 == 0 ? 0 : 1)
        return MemberView(
            userId: m.userId, roomNickname: m.nickname, roomAvatar: m.avatar, roomExt: m.ext, type: m.type,
            isMuted: m.isMuted, isTempMuted: remaining > 0, tempMuteDuration: remaining,
            isInBlackList: m.isBlocked(at: now), isOnline: isOnline(m.userId), enterTime: m.enterTime,
            pageKey: m.pageKey)
    }

    // MARK: events

    /// Adds a room-wide event with the next sequence number.
    mutating func emitToRoom(_ kind: RoomEventKind, _ fx: inout ApplyEffects) {
        seq &+= 1
        fx.events.append(RoomEvent(roomId: info.roomId, seq: seq, audience: .room, kind: kind))
    }

    /// Adds an event for particular users or sessions (no sequence number).
    func emit(_ kind: RoomEventKind, to audience: EventAudience, _ fx: inout ApplyEffects) {
        fx.events.append(RoomEvent(roomId: info.roomId, seq: 0, audience: audience, kind: kind))
    }

    /// N3: sends a notification to the room and keeps it in history (N4 decides for 301 / 302).
    /// `silently`: the command asked that the room not hear of it; only the app server does (W2), with seq 0.
    mutating func notify(_ type: NotificationType, by op: RoomOperator, targets: [String] = [],
                         notifyExt: String = "", ext: NotificationExt = .none, silently: Bool = false, env: ApplyEnv,
                         _ fx: inout ApplyEffects) {
        if silently {
            fx.record(.notification(roomId: info.roomId, RoomNotification(
                type: type, seq: 0, time: env.now, source: op.member, sourceRoomExt: op.roomExt,
                targets: targets.map(notificationMember), notifyExt: notifyExt, ext: ext)))
            return
        }
        seq &+= 1
        let n = RoomNotification(
            type: type, seq: seq, time: env.now, source: op.member, sourceRoomExt: op.roomExt,
            targets: targets.map(notificationMember), notifyExt: notifyExt, ext: ext)
        fx.record(.notification(roomId: info.roomId, n))
        fx.events.append(RoomEvent(roomId: info.roomId, seq: seq, audience: .room, kind: .notification(n)))
        let isEnterExit = type == .enter || type == .exit
        if !isEnterExit || env.policy.storeEnterExitInHistory {
            remember(.notification(n), env: env, &fx)
        }
    }

    /// A message's resend key: its sender and its clientMessageId, side by side (not joined into one string,
    /// which cost an allocation per lookup on every message sent).
    struct SentKey: Hashable, Sendable {
        var sender: String
        var clientMessageId: String
    }

    static func sentKey(_ m: ChatMessage) -> SentKey { SentKey(sender: m.senderId, clientMessageId: m.clientMessageId) }

    /// N5: appends to history, dropping what retention or the per-room cap no longer allows.
    mutating func remember(_ item: HistoryItem, env: ApplyEnv, _ fx: inout ApplyEffects) {
        fx.stored.append(StoredHistoryItem(roomId: info.roomId, item: item))
        if case .message(let m) = item, !m.clientMessageId.isEmpty { sentMessages[Self.sentKey(m)] = m.seq }
        let head = history.first?.seq
        let bytes = item.estimatedBytes
        history.append(item)
        historyBytes += bytes
        fx.windowBytes += bytes
        let oldest = env.now - env.limits.historyRetentionMillis
        while let first = history.first, first.time < oldest || history.count > env.limits.maxHistoryPerRoom {
            fx.windowBytes -= dropOldest(first)
        }
        if history.first?.seq != head { fx.newWindowHeads.append(info.roomId) }
    }

    /// Drops the oldest history item (`first`) from the window (it stays in the durable store); returns its
    /// estimated bytes. A resend of a dropped message is no longer recognized.
    mutating func dropOldest(_ first: HistoryItem) -> Int {
        let dropped = history.removeFirst()
        assert(dropped.seq == first.seq)
        droppedThroughSeq = max(droppedThroughSeq, dropped.seq)
        if case .message(let m) = dropped, !m.clientMessageId.isEmpty { sentMessages[Self.sentKey(m)] = nil }
        let bytes = dropped.estimatedBytes
        historyBytes -= bytes
        return bytes
    }
}

/// Who performs a command inside a room, resolved once: rank, display member and entry ext.
struct RoomOperator {
    var userId: String
    /// 0 visitor, 1 common, 2 manager, 3 creator, 4 app server.
    var rank: Int
    var member: NotificationMember
    var roomExt: String
    var session: RoomSession?

    static let appServerRank = 4

    /// The app server (or the cluster itself) as the operator of a notification.
    static let appServer = RoomOperator(userId: "", rank: appServerRank,
                                        member: NotificationMember(userId: "", nickname: ""), roomExt: "",
                                        session: nil)
    static let managerRank = 2
    static let creatorRank = 3
}

extension Room {
    /// Resolves the actor; a client must have entered the room with this session (R3).
    func resolveOperator(_ env: ApplyEnv) throws(RoomError) -> RoomOperator {
        switch env.context.actor {
        case .appServer:
            return .appServer
        case .session(let identity):
            guard let s = sessions[identity.sessionId], s.userId == identity.userId else {
                throw RoomError(.notEntered, "the session has not entered the room")
            }
            return RoomOperator(userId: s.userId, rank: rank(of: s.userId), member: notificationMember(s.userId),
                                roomExt: s.roomExt, session: s)
        }
    }

    func rank(of userId: String) -> Int { Int(members[userId]?.role.rawValue ?? 0) }

    /// M2 / M7: creator or managers (or the app server), acting only on users below them.
    func requireAuthority(_ op: RoomOperator, over target: String) throws(RoomError) {
        guard op.rank >= RoomOperator.managerRank else {
            throw RoomError(.noPermission, "only the creator and managers may do this")
        }
        let targetRank = rank(of: target)
        guard targetRank < RoomOperator.creatorRank, targetRank < op.rank else {
            throw RoomError(.noPermission, "the target's role is not below the operator's")
        }
    }

    /// M1: a user about to become fixed must fit under the fixed-member limit.
    func requireFixedRoom(for userId: String, _ env: ApplyEnv) throws(RoomError) {
        if members[userId]?.isFixed == true { return }
        guard fixedMemberCount < env.limits.maxFixedMembers else {
            throw RoomError(.tooManyFixedMembers, "the room has the maximum number of fixed members")
        }
    }

    /// The record of `userId`, created as a visitor when absent.
    mutating func ensureMember(_ userId: String) {
        if members[userId] == nil {
            members[userId] = RoomMember(
                userId: userId, role: .visitor, nickname: "", avatar: "", ext: "", isMuted: false,
                blockedUntil: nil, enterTime: 0, pageKey: nextPageKey)
            nextPageKey += 1
        }
    }

    /// M2: an offline user who is no longer fixed is no member at all.
    mutating func dropIfVisitorOffline(_ userId: String) {
        if let m = members[userId], !m.isFixed, !isOnline(userId) {
            members[userId] = nil
        }
    }
}

/// Field checks shared by every command.
enum FieldCheck {
    static func size(_ value: String, _ max: Int, _ field: StaticString) throws(RoomError) {
        guard value.utf8.count <= max else {
            throw RoomError(.badParameter, "\(field) exceeds \(max) bytes")
        }
    }

    /// A room id: its app-local part is an id of at most `maxIdBytes`, its namespace (`AppScope`) a short one.
    static func roomId(_ value: String, _ limits: RoomLimits) throws(RoomError) {
        try id(AppScope.local(value), limits.maxIdBytes, "roomId")
        try size(AppScope.namespace(of: value), limits.maxIdBytes, "roomId")
    }

    static func id(_ value: String, _ max: Int, _ field: StaticString) throws(RoomError) {
        guard !value.isEmpty else { throw RoomError(.badParameter, "\(field) is empty") }
        try size(value, max, field)
    }

    static func ids(_ values: [String], max count: Int, idBytes: Int, _ field: StaticString) throws(RoomError) {
        guard !values.isEmpty else { throw RoomError(.badParameter, "\(field) is empty") }
        guard values.count <= count else {
            throw RoomError(.badParameter, "\(field) has more than \(count) ids")
        }
        for v in values { try id(v, idBytes, field) }
    }
}
