extension Room {
    /// N1 / N2 / E5 / R5 / R6 / M9: send a chat message. Kept cheap: lookups only, no formatting.
    mutating func send(_ m: SendMessage, globalMuteEnd: Int64?, _ env: ApplyEnv, _ fx: inout ApplyEffects)
        throws(RoomError) -> RoomReply {
        let limits = env.limits
        try FieldCheck.size(m.body, limits.maxMessageBodyBytes, "body")
        try FieldCheck.size(m.ext, limits.maxMessageExtBytes, "ext")
        try FieldCheck.size(m.clientMessageId, limits.maxIdBytes, "clientMessageId")
        guard m.type != .notification else {
            throw RoomError(.noPermission, "notification messages are created only by the server")
        }
        let now = env.now
        let senderId: String
        let roomExt: String
        let member: RoomMember?
        switch env.context.actor {
        case .appServer:
            try FieldCheck.id(m.fromUser, limits.maxIdBytes, "fromUser")
            senderId = m.fromUser
            roomExt = ""
            member = members[senderId]
        case .session(let identity):
            guard let s = sessions[identity.sessionId], s.userId == identity.userId else {
                throw RoomError(.notEntered, "the session has not entered the room")
            }
            guard s.authMode != .anonymous else {
                throw RoomError(.anonymousCannotSend, "anonymous users cannot send messages")
            }
            member = members[s.userId]
            if let member, member.isBlocked(at: now) {
                throw RoomError(.inBlocklist, "the user is on the room's blocklist")
            }
            if let end = globalMuteEnd, end > now {
                throw RoomError(.globallyMuted, "the user is globally muted")
            }
            if member?.isMuted == true { throw RoomError(.muted, "the user is muted") }
            if !tempMutes.isEmpty, let end = tempMutes[s.userId], end > now {
                throw RoomError(.tempMuted, "the user is temporarily muted")
            }
            if info.isMuted && (member?.role ?? .visitor) < .manager && !allowlist.contains(s.userId) {
                throw RoomError(.roomMuted, "the room is muted")
            }
            senderId = s.userId
            roomExt = s.roomExt
        }
        // A resend (same sender, same clientMessageId, still in history) answers with the first send's
        // result and changes nothing, so a client may retry a send whose answer it never got.
        if !m.clientMessageId.isEmpty, !sentMessages.isEmpty,
           let first = sentMessages[SentKey(sender: senderId, clientMessageId: m.clientMessageId)],
           let item = historyItem(seq: first) {
            let serverId: UInt64 = if case .message(let sent) = item { sent.serverId } else { 0 }
            return .messageSent(seq: first, time: item.time, serverId: serverId)
        }
        seq &+= 1
        let message = ChatMessage(
            seq: seq, serverId: env.context.commandIndex, time: now, senderId: senderId,
            senderNickname: member?.nickname ?? "", senderAvatar: member?.avatar ?? "", senderRoomExt: roomExt,
            type: m.type, clientMessageId: m.clientMessageId, body: m.body, ext: m.ext, priority: m.priority)
        fx.events.append(RoomEvent(roomId: info.roomId, seq: seq, audience: .room, kind: .message(message)))
        remember(.message(message), env: env, &fx)
        fx.record(.message(roomId: info.roomId, message))
        return .messageSent(seq: seq, time: now, serverId: message.serverId)
    }

    /// N5: history within retention, from `startTime` in the asked order, filtered by type.
    func historyPage(_ q: HistoryQuery, _ env: ApplyEnv) throws(RoomError) -> [HistoryItem] {
        guard q.limit > 0, q.limit <= env.limits.maxHistoryLimit else {
            throw RoomError(.badParameter, "limit must be 1 … \(env.limits.maxHistoryLimit)")
        }
        guard q.startTime >= 0 else { throw RoomError(.badParameter, "startTime is negative") }
        _ = try resolveOperator(env)
        let oldest = env.now - env.limits.historyRetentionMillis
        let wanted = Set(q.types)
        var out: [HistoryItem] = []
        func take(_ item: HistoryItem) -> Bool {
            if item.time >= oldest && (wanted.isEmpty || wanted.contains(item.messageType)) { out.append(item) }
            return out.count < q.limit
        }
        if q.ascending {
            for item in history where item.time > q.startTime {
                if !take(item) { break }
            }
        } else {
            let start = q.startTime == 0 ? Int64.max : q.startTime
            for item in history.reversed() where item.time < start {
                if !take(item) { break }
            }
        }
        return out
    }

    /// The history item with this seq, by binary search (history is in seq order).
    func historyItem(seq: UInt64) -> HistoryItem? {
        var lo = 0, hi = history.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if history[mid].seq < seq { lo = mid + 1 } else { hi = mid }
        }
        return lo < history.count && history[lo].seq == seq ? history[lo] : nil
    }

    /// X2: stored items after `seq`, oldest first; `historyGone` when retention already dropped some of them.
    func history(after seq: UInt64, limit: Int, _ env: ApplyEnv) throws(RoomError) -> [HistoryItem] {
        guard limit > 0, limit <= env.limits.maxResumeItems else {
            throw RoomError(.badParameter, "limit must be 1 … \(env.limits.maxResumeItems)")
        }
        _ = try resolveOperator(env)
        guard seq >= droppedThroughSeq else {
            throw RoomError(.historyGone, "history no longer holds seq \(seq + 1) … \(droppedThroughSeq)")
        }
        // History is in seq order: find the first item after `seq` by binary search.
        var lo = 0, hi = history.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if history[mid].seq <= seq { lo = mid + 1 } else { hi = mid }
        }
        return Array(history[lo ..< min(history.count, lo + limit)])
    }

    /// R4: creator or managers update the room; 312 with notifyExt when asked.
    mutating func update(_ u: UpdateRoom, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        let limits = env.limits
        guard u.name != nil || u.announcement != nil || u.broadcastUrl != nil || u.ext != nil
            || u.queueModificationLevel != nil else {
            throw RoomError(.badParameter, "nothing to update")
        }
        if let name = u.name { try FieldCheck.id(name, limits.maxRoomNameBytes, "name") }
        try FieldCheck.size(u.announcement ?? "", limits.maxAnnouncementBytes, "announcement")
        try FieldCheck.size(u.broadcastUrl ?? "", limits.maxBroadcastUrlBytes, "broadcastUrl")
        try FieldCheck.size(u.ext ?? "", limits.maxRoomExtBytes, "ext")
        try FieldCheck.size(u.notifyExt, limits.maxNotifyExtBytes, "notifyExt")
        let op = try resolveOperator(env)
        guard op.rank >= RoomOperator.managerRank else {
            throw RoomError(.noPermission, "only the creator and managers update the room")
        }
        if let v = u.name { info.name = v }
        if let v = u.announcement { info.announcement = v }
        if let v = u.broadcastUrl { info.broadcastUrl = v }
        if let v = u.ext { info.ext = v }
        if let v = u.queueModificationLevel { info.queueModificationLevel = v }
        if u.needNotify {
            notify(.infoUpdated, by: op, notifyExt: u.notifyExt, env: env, &fx)
        } else {
            fx.record(.updated(roomId: info.roomId))
        }
    }

    /// R5: room-wide mute; 318 / 319 and the RC room mute events.
    mutating func setRoomMute(_ s: RoomSwitch, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        guard s.userIds.isEmpty else { throw RoomError(.badParameter, "room mute takes no user ids") }
        try FieldCheck.size(s.notifyExt, env.limits.maxNotifyExtBytes, "notifyExt")
        let op = try resolveOperator(env)
        guard op.rank >= RoomOperator.managerRank else {
            throw RoomError(.noPermission, "only the creator and managers mute the room")
        }
        guard info.isMuted != s.enable else {
            throw RoomError(.alreadyInState, s.enable ? "the room is already muted" : "the room is not muted")
        }
        info.isMuted = s.enable
        notify(s.enable ? .roomMuted : .roomUnmuted, by: op, notifyExt: s.notifyExt, silently: !s.needNotify, env: env, &fx)
        if s.needNotify {
            emitToRoom(.ban(s.enable ? .roomMute : .roomUnmute, durationMillis: 0, operateTime: env.now,
                            userIds: [], extra: s.notifyExt), &fx)
        }
    }

    /// R6: add to or remove from the mute allowlist; RC events to the room.
    mutating func updateAllowlist(_ s: RoomSwitch, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        try FieldCheck.ids(s.userIds, max: env.limits.maxAllowlistIdsPerRequest, idBytes: env.limits.maxIdBytes,
                           "userIds")
        try FieldCheck.size(s.notifyExt, env.limits.maxNotifyExtBytes, "notifyExt")
        let op = try resolveOperator(env)
        guard op.rank >= RoomOperator.managerRank else {
            throw RoomError(.noPermission, "only the creator and managers change the allowlist")
        }
        for id in s.userIds {
            if s.enable { allowlist.insert(id) } else { allowlist.remove(id) }
        }
        if s.needNotify {
            emitToRoom(.ban(s.enable ? .allowlistAdd : .allowlistRemove, durationMillis: 0, operateTime: env.now,
                            userIds: s.userIds, extra: s.notifyExt), &fx)
        }
    }
}
