extension Room {
    private func checkTarget(_ u: MemberUpdate, _ env: ApplyEnv) throws(RoomError) {
        try FieldCheck.id(u.userId, env.limits.maxIdBytes, "userId")
        try FieldCheck.size(u.notifyExt, env.limits.maxNotifyExtBytes, "notifyExt")
    }

    private func requireNoDuration(_ u: MemberUpdate) throws(RoomError) {
        guard u.duration == 0 else { throw RoomError(.badParameter, "this operation takes no duration") }
    }

    /// M2: only the creator sets or removes managers; removing a manager makes an ordinary member.
    mutating func markManager(_ u: MemberUpdate, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        try checkTarget(u, env)
        try requireNoDuration(u)
        let op = try resolveOperator(env)
        guard op.rank >= RoomOperator.creatorRank else {
            throw RoomError(.noPermission, "only the creator sets or removes managers")
        }
        let role = members[u.userId]?.role ?? .visitor
        guard role != .creator else { throw RoomError(.noPermission, "the creator's role cannot change") }
        try toggle(u, by: op, isSet: role == .manager, "a manager", (.addManager, .removeManager), env, &fx) {
            $0.role = u.enable ? .manager : .common
        }
    }

    /// M2: ordinary members; a manager cannot be made one, removal makes a visitor.
    mutating func markCommon(_ u: MemberUpdate, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        try checkTarget(u, env)
        try requireNoDuration(u)
        let op = try resolveOperator(env)
        let role = members[u.userId]?.role ?? .visitor
        if role == .manager && op.rank >= RoomOperator.creatorRank {
            throw RoomError(.invalidRoleTransition, "a manager cannot be set as an ordinary member")
        }
        try requireAuthority(op, over: u.userId)
        try toggle(u, by: op, isSet: role == .common, "an ordinary member", (.addCommon, .removeCommon), env, &fx) {
            $0.role = u.enable ? .common : .visitor
        }
    }

    /// M2 / E9 / RC block: a blocked user becomes fixed, is disconnected (reason 5) and cannot enter.
    /// `duration` is minutes (RC 1 … 43,200); 0 = permanent (NIM). A repeat replaces the expiry.
    mutating func setBlocked(_ u: MemberUpdate, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        try checkTarget(u, env)
        guard u.duration <= UInt64(env.limits.maxBanMinutes) else {
            throw RoomError(.badParameter, "block duration exceeds \(env.limits.maxBanMinutes) minutes")
        }
        let op = try resolveOperator(env)
        try requireAuthority(op, over: u.userId)
        let now = env.now
        if u.enable {
            try requireFixedRoom(for: u.userId, env)
            ensureMember(u.userId)
            let millis = Int64(u.duration) * 60_000
            members[u.userId]!.blockedUntil = u.duration == 0 ? Int64.max : now + millis
            notify(.addBlock, by: op, targets: [u.userId], notifyExt: u.notifyExt, silently: !u.needNotify, env: env, &fx)
            if u.needNotify {
                emitToRoom(.block(blocked: true, durationMillis: millis, operateTime: now, userIds: [u.userId],
                                  extra: u.notifyExt), &fx)
            }
            kickUser(u.userId, .blacklist, ext: u.notifyExt, env, &fx)
        } else {
            try requireNoDuration(u)
            guard members[u.userId]?.blockedUntil != nil else {
                throw RoomError(.alreadyInState, "the user is not on the blocklist")
            }
            members[u.userId]!.blockedUntil = nil
            dropIfVisitorOffline(u.userId)
            notify(.removeBlock, by: op, targets: [u.userId], notifyExt: u.notifyExt, silently: !u.needNotify, env: env, &fx)
            if u.needNotify {
                emit(.block(blocked: false, durationMillis: 0, operateTime: now, userIds: [u.userId],
                            extra: u.notifyExt), to: .users([u.userId]), &fx)
            }
        }
    }

    /// M2: permanent mute makes a fixed member; lifting it leaves any temporary mute alone.
    mutating func setMuted(_ u: MemberUpdate, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        try checkTarget(u, env)
        try requireNoDuration(u)
        let op = try resolveOperator(env)
        try requireAuthority(op, over: u.userId)
        try toggle(u, by: op, isSet: members[u.userId]?.isMuted ?? false, "muted", (.addMute, .removeMute), env,
                   &fx) { $0.isMuted = u.enable }
    }

    /// M2: the shape every mark / unmark shares: state check, fixed-member limit, the change,
    /// dropping a record that is no longer a member, and the notice.
    private mutating func toggle(_ u: MemberUpdate, by op: RoomOperator, isSet: Bool, _ label: String,
                                 _ notices: (on: NotificationType, off: NotificationType), _ env: ApplyEnv,
                                 _ fx: inout ApplyEffects, change: (inout RoomMember) -> Void) throws(RoomError) {
        guard isSet != u.enable else {
            throw RoomError(.alreadyInState, u.enable ? "already \(label)" : "not \(label)")
        }
        if u.enable { try requireFixedRoom(for: u.userId, env) }
        ensureMember(u.userId)
        change(&members[u.userId]!)
        dropIfVisitorOffline(u.userId)
        notify(u.enable ? notices.on : notices.off, by: op, targets: [u.userId], notifyExt: u.notifyExt,
               silently: !u.needNotify, env: env, &fx)
    }

    /// M8: temporary mute for `duration` seconds (0 lifts it); a repeat replaces the expiry;
    /// the role never changes. 314 / 315 carry the duration; RC ban events carry it in ms.
    mutating func setTempMute(_ u: MemberUpdate, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        try checkTarget(u, env)
        guard u.duration <= UInt64(env.limits.maxBanMinutes) * 60 else {
            throw RoomError(.badParameter, "temporary mute exceeds \(env.limits.maxBanMinutes) minutes")
        }
        let op = try resolveOperator(env)
        try requireAuthority(op, over: u.userId)
        let now = env.now
        if u.duration > 0 {
            tempMutes[u.userId] = now + Int64(u.duration) * 1000
        } else {
            guard let end = tempMutes[u.userId], end > now else {
                throw RoomError(.alreadyInState, "the user is not temporarily muted")
            }
            tempMutes[u.userId] = nil
        }
        notify(u.duration > 0 ? .addTempMute : .removeTempMute, by: op, targets: [u.userId],
               notifyExt: u.notifyExt, ext: .muteDuration(seconds: u.duration), silently: !u.needNotify, env: env, &fx)
        if u.needNotify {
            emitToRoom(.ban(u.duration > 0 ? .muteUser : .unmuteUser, durationMillis: Int64(u.duration) * 1000,
                            operateTime: now, userIds: [u.userId], extra: u.notifyExt), &fx)
        }
    }

    /// M7: creator or managers kick online users below them: 313, then reason 2 with notifyExt.
    mutating func kick(_ u: MemberUpdate, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        try checkTarget(u, env)
        try requireNoDuration(u)
        guard u.enable else { throw RoomError(.badParameter, "kick takes enable = true") }
        let op = try resolveOperator(env)
        try requireAuthority(op, over: u.userId)
        guard isOnline(u.userId) else { throw RoomError(.memberNotFound, "the user is not in the room") }
        notify(.kicked, by: op, targets: [u.userId], notifyExt: u.notifyExt, env: env, &fx)
        kickUser(u.userId, .byManager, ext: u.notifyExt, env, &fx)
    }

    /// M6: a user updates their own nickname, avatar or ext; 316 when asked.
    mutating func updateMyInfo(_ u: UpdateMyMemberInfo, _ env: ApplyEnv, _ fx: inout ApplyEffects)
        throws(RoomError) {
        let limits = env.limits
        guard u.nickname != nil || u.avatar != nil || u.ext != nil else {
            throw RoomError(.badParameter, "nothing to update")
        }
        try FieldCheck.size(u.nickname ?? "", limits.maxNicknameBytes, "nickname")
        try FieldCheck.size(u.avatar ?? "", limits.maxAvatarBytes, "avatar")
        try FieldCheck.size(u.ext ?? "", limits.maxMemberExtBytes, "ext")
        try FieldCheck.size(u.notifyExt, limits.maxNotifyExtBytes, "notifyExt")
        var op = try resolveOperator(env)
        guard let session = op.session else {
            throw RoomError(.noPermission, "only a member updates their own info")
        }
        if session.authMode == .anonymous && (u.nickname?.isEmpty == true || u.avatar?.isEmpty == true) {
            throw RoomError(.badParameter, "anonymous users must keep a nickname and an avatar")
        }
        let userId = session.userId
        if let v = u.nickname { members[userId]!.nickname = v }
        if let v = u.avatar { members[userId]!.avatar = v }
        if let v = u.ext {
            members[userId]!.ext = v
            for sid in userSessions[userId]! { sessions[sid]!.roomExt = v }
            op.roomExt = v
        }
        op.member = notificationMember(userId)
        notify(.memberInfoUpdated, by: op, targets: [userId], notifyExt: u.notifyExt, silently: !u.needNotify, env: env, &fx)
    }

    /// M4: one page of members of a kind, from the anchor (exclusive).
    func memberPage(_ q: FetchMembers, _ env: ApplyEnv) throws(RoomError) -> [MemberView] {
        guard q.limit > 0, q.limit <= env.limits.maxMembersPageLimit else {
            throw RoomError(.badParameter, "limit must be 1 … \(env.limits.maxMembersPageLimit)")
        }
        _ = try resolveOperator(env)
        let fixed = q.kind == .regular || q.kind == .regularOnline
        let newestFirst = q.kind != .temp
        var picked: [RoomMember] = []
        for m in members.values where m.isFixed == fixed {
            if q.kind == .regularOnline && !isOnline(m.userId) { continue }
            if q.anchor != 0 && (newestFirst ? m.pageKey >= q.anchor : m.pageKey <= q.anchor) { continue }
            picked.append(m)
        }
        picked.sort { newestFirst ? $0.pageKey > $1.pageKey : $0.pageKey < $1.pageKey }
        return picked.prefix(q.limit).map { memberView($0, now: env.now) }
    }

    /// M5: members by ids (≤ 20), in the order asked; unknown ids are left out.
    func membersByIds(_ q: RoomUsers, _ env: ApplyEnv) throws(RoomError) -> [MemberView] {
        try FieldCheck.ids(q.userIds, max: env.limits.maxMemberIdsPerRequest, idBytes: env.limits.maxIdBytes,
                           "userIds")
        _ = try resolveOperator(env)
        return q.userIds.compactMap { id in members[id].map { memberView($0, now: env.now) } }
    }
}
