/// How a session left a room.
enum SessionEnd: Equatable {
    /// E10: the user exited.
    case exit
    /// The connection or its edge was lost; the caller clears the transient queue elements of
    /// everyone who went offline at once (one 320 per room, Q3).
    case lost
}

extension Room {
    /// E1 / E5 / M2: checks an enter without changing anything.
    func validateEnter(_ e: EnterRoom, _ identity: SessionIdentity, _ env: ApplyEnv) throws(RoomError) {
        let limits = env.limits
        try FieldCheck.id(identity.userId, limits.maxIdBytes, "userId")
        try FieldCheck.id(identity.sessionId, limits.maxIdBytes, "sessionId")
        try FieldCheck.size(identity.edgeId, limits.maxIdBytes, "edgeId")
        try FieldCheck.size(e.nickname, limits.maxNicknameBytes, "nickname")
        try FieldCheck.size(e.avatar, limits.maxAvatarBytes, "avatar")
        try FieldCheck.size(e.roomExt, limits.maxMemberExtBytes, "roomExt")
        try FieldCheck.size(e.roomNotifyExt, limits.maxNotifyExtBytes, "roomNotifyExt")
        if identity.authMode == .anonymous && (e.nickname.isEmpty || e.avatar.isEmpty) {
            throw RoomError(.badParameter, "anonymous users must give a nickname and an avatar")
        }
        if members[identity.userId]?.isBlocked(at: env.now) == true {
            throw RoomError(.inBlocklist, "the user is on the room's blocklist")
        }
        if sessions[identity.sessionId] != nil {
            throw RoomError(.sessionAlreadyEntered, "the session has already entered the room")
        }
        try FieldCheck.size(e.replacing, limits.maxIdBytes, "replacing")
    }

    /// E1 / E7: adds the session (after `validateEnter` and the shard's E3 check).
    mutating func enter(_ e: EnterRoom, _ identity: SessionIdentity, _ env: ApplyEnv,
                        _ fx: inout ApplyEffects) -> RoomReply {
        let userId = identity.userId
        let now = env.now
        // A block that has run out ends here, where it matters.
        if let until = members[userId]?.blockedUntil, until <= now {
            members[userId]!.blockedUntil = nil
        }
        // C5: a session handed over from a draining edge leaves in silence; the user never went offline, so
        // no one hears of the move (no 302/301, no multi-login sync) and their transient queue elements stay.
        var tookOver = false
        if !e.replacing.isEmpty, e.replacing != identity.sessionId, sessions[e.replacing]?.userId == userId {
            sessions[e.replacing] = nil
            userSessions[userId]!.removeAll { $0 == e.replacing }
            tookOver = true
        }
        let existing = userSessions[userId] ?? []
        if !existing.isEmpty && !tookOver {
            switch info.devicePolicy ?? env.policy.devicePolicy {
            case .singleDevice:
                // E7: the older sessions go; the user stays online through the new one.
                for sid in existing { sessions[sid] = nil }
                userSessions[userId] = []
                emit(.kicked(reason: .byConflictLogin, ext: ""), to: .sessions(existing), &fx)
            case .multiDevice:
                emit(.multiLoginSync(joined: true, reason: 0, time: now), to: .sessions(existing), &fx)
            }
        }
        sessions[identity.sessionId] = RoomSession(
            sessionId: identity.sessionId, userId: userId, edgeId: identity.edgeId, authMode: identity.authMode,
            roomExt: e.roomExt, roomNotifyExt: e.roomNotifyExt, enterTime: now)
        userSessions[userId, default: []].append(identity.sessionId)
        ensureMember(userId)
        members[userId]!.enterTime = now
        if !e.nickname.isEmpty { members[userId]!.nickname = e.nickname }
        if !e.avatar.isEmpty { members[userId]!.avatar = e.avatar }
        members[userId]!.ext = e.roomExt

        if existing.isEmpty && !tookOver {
            fx.online.append(userId)
            fx.record(.entered(roomId: info.roomId, userId: userId))
            if enterExitEnabled(env) {
                let op = RoomOperator(userId: userId, rank: rank(of: userId), member: notificationMember(userId),
                                      roomExt: e.roomExt, session: nil)
                notify(.enter, by: op, targets: [userId], notifyExt: e.roomNotifyExt, env: env, &fx)
            }
            if env.policy.memberChangeEvents {
                emitToRoom(.memberChange([MemberAction(userId: userId, action: .join)],
                                         memberCount: onlineUserCount), &fx)
            }
        }
        emit(.status(.joined(memberCount: onlineUserCount, time: now)), to: .sessions([identity.sessionId]), &fx)
        return .entered(EnterResult(room: view, member: memberView(members[userId]!, now: now),
                                    authMode: identity.authMode))
    }

    /// E10 / lost connection: ends one session; the user goes offline with their last session.
    mutating func endSession(_ sessionId: String, _ cause: SessionEnd, _ env: ApplyEnv, _ fx: inout ApplyEffects) {
        guard let s = sessions.removeValue(forKey: sessionId) else { return }
        userSessions[s.userId]!.removeAll { $0 == sessionId }
        // The session's own last word: `quit` answers its exit; `lost` tells a client whose edge the cluster
        // stopped hearing (it may well still be connected) that it is out of the room.
        emit(.status(cause == .exit ? .quit : .lost), to: .sessions([sessionId]), &fx)
        let remaining = userSessions[s.userId]!
        if remaining.isEmpty {
            userSessions[s.userId] = nil
            userWentOffline(s.userId, exitFrom: s, clearQueue: cause == .exit,
                            reason: cause == .exit ? .exit : .disconnected, env, &fx)
        } else {
            emit(.multiLoginSync(joined: false, reason: 1, time: env.now), to: .sessions(remaining), &fx)
        }
    }

    /// E9: removes every session of a user with a kick result (reason 2, 3 or 5).
    mutating func kickUser(_ userId: String, _ reason: KickReason, ext: String, _ env: ApplyEnv,
                           _ fx: inout ApplyEffects) {
        guard let sids = userSessions.removeValue(forKey: userId) else { return }
        for sid in sids { sessions[sid] = nil }
        emit(.kicked(reason: reason, ext: ext), to: .sessions(sids), &fx)
        userWentOffline(userId, exitFrom: nil, clearQueue: true, reason: .kicked, env, &fx)
    }

    /// E10 / Q3 / E12 / M2: what follows when a user's last session is gone.
    /// `exitFrom` is the session that left by itself (302 is sent for it); kicks send their own notice.
    mutating func userWentOffline(_ userId: String, exitFrom session: RoomSession?, clearQueue: Bool,
                                  reason: LeaveReason, _ env: ApplyEnv, _ fx: inout ApplyEffects) {
        fx.offline.append(userId)
        fx.record(.left(roomId: info.roomId, userId: userId, reason: reason))
        if let s = session, enterExitEnabled(env) {
            let op = RoomOperator(userId: userId, rank: rank(of: userId), member: notificationMember(userId),
                                  roomExt: s.roomExt, session: s)
            notify(.exit, by: op, targets: [userId], notifyExt: s.roomNotifyExt, env: env, &fx)
        }
        if clearQueue {
            let op = RoomOperator(userId: userId, rank: rank(of: userId), member: notificationMember(userId),
                                  roomExt: session?.roomExt ?? "", session: nil)
            removeTransientItems(ownedBy: [userId], by: op, env, &fx)
        }
        dropIfVisitorOffline(userId)
        if env.policy.memberChangeEvents {
            emitToRoom(.memberChange([MemberAction(userId: userId, action: .quit)], memberCount: onlineUserCount),
                       &fx)
        }
    }

    /// R2: closes the room: 311, everyone kicked with reason 1, RC destroyed.
    mutating func close(ext: String, _ env: ApplyEnv, _ fx: inout ApplyEffects) {
        notify(.closed, by: .appServer, env: env, &fx)
        let users = userSessions.keys.sorted()
        var all: [String] = []
        for u in users { all.append(contentsOf: userSessions[u]!) }
        if !all.isEmpty {
            emit(.kicked(reason: .invalidRoom, ext: ext), to: .sessions(all), &fx)
            emit(.status(.destroyed(type: 0)), to: .sessions(all), &fx)
        }
        sessions = [:]
        userSessions = [:]
        for u in users {
            fx.offline.append(u)
            fx.record(.left(roomId: info.roomId, userId: u, reason: .roomClosed))
            dropIfVisitorOffline(u)
        }
        // Nobody is left to tell: transient elements simply go (Q3).
        queue.removeAll { $0.value.transient }
        info.isOpen = false
    }
}
