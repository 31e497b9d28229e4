import ParleyCluster
import ParleyIM
import ParleyRooms

/// Issue 19: the IM objects of the client protocol (docs/protocol.md, "IM"), accounts as the app knows them.
extension JSONText {
    /// One item of a user's conversation log (the same fields as the server API's `/v1/msg/sync`).
    public mutating func imItem(_ item: ImLogItem) {
        beginObject()
        field("seq", item.seq)
        field("time", item.time)
        switch item.kind {
        case .message(let m, let alert):
            field("kind", "message")
            field("from", AppScope.local(m.from)); field("to", AppScope.local(m.to))
            field("msgId", m.clientMessageId); field("type", m.type); field("body", m.body); field("ext", m.ext)
            field("receiverSeq", m.receiverSeq); field("alert", alert)
        case .friendNotification(let source, let target, let operation, let message):
            field("kind", "friendAdd")
            field("source", AppScope.local(source)); field("target", AppScope.local(target))
            field("operation", Int(operation.rawValue)); field("msg", message)
        case .teamNotice(let notice, let teamId, let source, let message):
            field("kind", "teamNotice")
            field("source", AppScope.local(source)); field("teamId", AppScope.local(teamId))
            field("operation", Int(notice.rawValue)); field("msg", message)
        }
        endObject()
    }

    /// One item of a team's log: a member's message or a team notification (NIMTeamNotificationContent).
    public mutating func teamItem(_ item: TeamLogItem) {
        beginObject()
        field("seq", item.seq)
        field("time", item.time)
        switch item.kind {
        case .message(let m):
            field("kind", "message")
            field("from", AppScope.local(m.from)); field("msgId", m.clientMessageId); field("type", m.type)
            field("body", m.body); field("ext", m.ext)
        case .notification(let n):
            field("kind", "notification")
            field("operation", Int(n.operation.rawValue)); field("source", AppScope.local(n.source))
            field("targets", strings: n.targets.map(AppScope.local)); field("notifyExt", n.notifyExt)
            key("attachment")
            beginObject()
            for tag in n.attachment.keys.sorted() { field("\(tag.rawValue)", n.attachment[tag]!) }
            endObject()
        }
        endObject()
    }

    /// A team as a member reads it: info, members and the log items asked for.
    public mutating func team(_ t: TeamView) {
        beginObject()
        field("teamId", AppScope.local(t.teamId))
        field("type", t.info.type.name)
        field("name", t.info.name); field("intro", t.info.intro); field("announcement", t.info.announcement)
        field("avatar", t.info.avatar)
        field("joinMode", Self.name(t.info.joinMode, TeamRequest.joinModes))
        field("inviteMode", Self.name(t.info.inviteMode, TeamRequest.permissions))
        field("beInviteMode", Self.name(t.info.beInviteMode, TeamRequest.beInviteModes))
        field("updateInfoMode", Self.name(t.info.updateInfoMode, TeamRequest.permissions))
        field("muteAll", t.info.muteAll)
        field("owner", AppScope.local(t.owner))
        key("members")
        beginArray()
        for m in t.members {
            beginObject()
            field("account", AppScope.local(m.account))
            field("role", ["normal", "manager", "owner"][Int(m.member.role.rawValue)])
            field("muted", m.member.muted)
            field("notifyState", Self.name(m.member.notify, TeamRequest.notifyStates))
            field("joinedAt", m.member.joinedAt)
            endObject()
        }
        endArray()
        key("items"); beginArray(); for i in t.items { teamItem(i) }; endArray()
        field("nextSeq", t.nextSeq)
        endObject()
    }

    /// Issue 38: who read each team message asked for, and who has not (accounts as the app knows them).
    public mutating func teamReceipts(_ receipts: [TeamReceipt]) {
        beginArray()
        for x in receipts {
            beginObject()
            field("seq", x.seq); field("from", AppScope.local(x.from))
            field("readCount", x.readers.count); field("unreadCount", x.unread.count)
            field("readers", strings: x.readers.map(AppScope.local)); field("unread", strings: x.unread.map(AppScope.local))
            endObject()
        }
        endArray()
    }

    /// Issue 38: a user's one-to-one conversations, newest first.
    public mutating func conversations(_ list: [ConversationView]) {
        beginArray()
        for c in list {
            beginObject()
            field("peer", AppScope.local(c.peer)); key("last"); imItem(c.last); field("unread", c.unread)
            field("readThrough", c.readThrough); field("peerReadThrough", c.peerReadThrough)
            endObject()
        }
        endArray()
    }

    /// Issue 38 item 4: the user's teams as conversations: the newest message (null when none), unread, position.
    public mutating func teamSummaries(_ list: [TeamSummary]) {
        beginArray()
        for t in list {
            beginObject()
            field("teamId", AppScope.local(t.teamId))
            key("last"); if let last = t.last { teamItem(last) } else { null() }
            field("unread", t.unread); field("readThrough", t.readThrough)
            endObject()
        }
        endArray()
    }

    private static func name<T: Equatable>(_ value: T, _ table: [String: T]) -> String {
        table.first { $0.value == value }?.key ?? "?"
    }

    public mutating func relations(_ r: ImRelations) {
        beginObject()
        key("friends")
        beginArray()
        for f in r.friends {
            beginObject(); field("account", AppScope.local(f.account)); field("remark", f.remark); field("since", f.since); endObject()
        }
        endArray()
        for (name, list) in [("incoming", r.incoming), ("outgoing", r.outgoing)] {
            key(name)
            beginArray()
            for q in list {
                beginObject(); field("account", AppScope.local(q.account)); field("message", q.message); field("time", q.at); endObject()
            }
            endArray()
        }
        field("blocked", strings: r.blocked.map(AppScope.local))
        field("muted", strings: r.muted.map(AppScope.local))
        field("teams", strings: r.teams.map(AppScope.local))
        endObject()
    }
}

extension EventFrame {
    /// An IM event for one user's devices: `{"event": "im", "kind": …}`.
    static func im(_ event: ImEvent) -> String {
        var j = JSONText()
        j.beginObject()
        j.field("event", "im")
        switch event.kind {
        case .friendChanged(let friend, let isFriend):
            j.field("kind", "friendChanged"); j.field("friend", AppScope.local(friend)); j.field("isFriend", isFriend)
        case .blocklistChanged: j.field("kind", "blocklistChanged")
        case .muteListChanged: j.field("kind", "muteListChanged")
        case .item(let item): j.field("kind", "item"); j.key("item"); j.imItem(item)
        case .teamMembership(let teamId, let isMember, let fromSeq):
            j.field("kind", "teamMembership"); j.field("teamId", AppScope.local(teamId)); j.field("isMember", isMember)
            if isMember { j.field("fromSeq", fromSeq) }
        case .read(.p2p(let peer), let reader, let through):
            j.field("kind", "p2pRead"); j.field("peer", AppScope.local(peer)); j.field("reader", AppScope.local(reader))
            j.field("throughSeq", through)
        case .read(.team(let teamId), let reader, let through):
            j.field("kind", "teamRead"); j.field("teamId", AppScope.local(teamId)); j.field("reader", AppScope.local(reader))
            j.field("throughSeq", through)
        }
        j.endObject()
        return j.string
    }

    /// The user's feed lost events (its replica restarted or the edge fell behind): sync from the last seq held.
    static let imSyncNeeded = #"{"event":"im","kind":"syncNeeded"}"#

    /// A team log item for a member: `alert` false when the member's notify state silences it (team DND).
    static func team(_ event: TeamEvent, alert: Bool) -> String {
        var j = JSONText()
        j.beginObject()
        j.field("event", "team")
        j.field("teamId", AppScope.local(event.teamId))
        j.field("alert", alert)
        j.key("item"); j.teamItem(event.item)
        j.endObject()
        return j.string
    }
}
