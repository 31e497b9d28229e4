import ParleyRooms

/// The protocol's objects (docs/protocol.md, "Objects") written from the room domain's types.
extension JSONText {
    public mutating func room(_ view: RoomInfoView) {
        let info = view.info
        beginObject()
        field("roomId", AppScope.local(info.roomId))  // the id the client's app knows (A8)
        field("name", info.name)
        field("announcement", info.announcement)
        field("creator", info.creator)
        field("ext", info.ext)
        field("broadcastUrl", info.broadcastUrl)
        field("queueLevel", Int(info.queueModificationLevel.rawValue))
        field("isMuted", info.isMuted)
        field("isOpen", info.isOpen)
        field("onlineUserCount", view.onlineUserCount)
        field("seq", view.seq)
        endObject()
    }

    public mutating func member(_ m: MemberView) {
        beginObject()
        field("userId", m.userId)
        field("nickname", m.roomNickname)
        field("avatar", m.roomAvatar)
        field("ext", m.roomExt)
        field("type", m.type.protocolName)
        field("isMuted", m.isMuted)
        field("isTempMuted", m.isTempMuted)
        field("tempMuteDuration", m.tempMuteDuration)
        field("isInBlackList", m.isInBlackList)
        field("isOnline", m.isOnline)
        field("enterTime", m.enterTime)
        field("pageKey", m.pageKey)
        endObject()
    }

    public mutating func members(_ list: [MemberView]) {
        beginArray()
        for m in list { member(m) }
        endArray()
    }

    /// Message fields without the enclosing braces, so HistoryItem can add `kind` in the same object.
    mutating func messageFields(_ m: ChatMessage) {
        field("seq", m.seq)
        field("serverId", m.serverId)
        field("time", m.time)
        field("from", m.senderId)
        field("fromNickname", m.senderNickname)
        field("fromAvatar", m.senderAvatar)
        field("fromExt", m.senderRoomExt)
        field("type", m.type.protocolName)
        field("clientMessageId", m.clientMessageId)
        field("body", m.body)
        field("ext", m.ext)
        if m.priority != .normal { field("priority", m.priority.name) }  // D3: absent means normal
    }

    public mutating func message(_ m: ChatMessage) {
        beginObject()
        messageFields(m)
        endObject()
    }

    mutating func notificationFields(_ n: RoomNotification) {
        field("seq", n.seq)
        field("time", n.time)
        field("type", Int(n.type.rawValue))
        key("source")
        notificationMember(n.source)
        field("sourceExt", n.sourceRoomExt)
        key("targets")
        beginArray()
        for t in n.targets { notificationMember(t) }
        endArray()
        field("notifyExt", n.notifyExt)
        key("ext")
        switch n.ext {
        case .none:
            null()
        case .muteDuration(let seconds):
            beginObject()
            field("muteDuration", seconds)
            endObject()
        case .queueChange(let change, let k, let v):
            beginObject()
            field("change", change.protocolName)
            field("key", k)
            field("value", v)
            endObject()
        case .queueBatch(let change, let elements):
            beginObject()
            field("change", change.protocolName)
            key("elements")
            queueEntries(elements)
            endObject()
        }
    }

    public mutating func notification(_ n: RoomNotification) {
        beginObject()
        notificationFields(n)
        endObject()
    }

    mutating func notificationMember(_ m: NotificationMember) {
        beginObject()
        field("userId", m.userId)
        field("nickname", m.nickname)
        endObject()
    }

    public mutating func queueEntry(_ e: QueueEntry) {
        beginObject()
        field("key", e.key)
        field("value", e.value)
        endObject()
    }

    public mutating func queueEntries(_ list: [QueueEntry]) {
        beginArray()
        for e in list { queueEntry(e) }
        endArray()
    }

    public mutating func historyItem(_ item: HistoryItem) {
        beginObject()
        switch item {
        case .message(let m):
            field("kind", "message")
            messageFields(m)
        case .notification(let n):
            field("kind", "notification")
            notificationFields(n)
        }
        endObject()
    }

    public mutating func historyItems(_ items: [HistoryItem]) {
        beginArray()
        for item in items { historyItem(item) }
        endArray()
    }
}

extension MemberType {
    var protocolName: String {
        switch self {
        case .creator: return "creator"
        case .manager: return "manager"
        case .common: return "common"
        case .limited: return "limited"
        case .visitor: return "visitor"
        }
    }
}

extension MessageType {
    public var protocolName: String {
        switch self {
        case .text: return "text"
        case .image: return "image"
        case .audio: return "audio"
        case .video: return "video"
        case .location: return "location"
        case .notification: return "notification"
        case .file: return "file"
        case .tip: return "tip"
        case .custom: return "custom"
        }
    }

    public init?(protocolName: String) {
        guard let t = MessageType.allCases.first(where: { $0.protocolName == protocolName }) else { return nil }
        self = t
    }
}

extension QueueChangeType {
    var protocolName: String {
        switch self {
        case .offer: return "offer"
        case .poll: return "poll"
        case .drop: return "drop"
        case .update: return "update"
        case .partClear: return "partClear"
        case .batchUpdate: return "batchUpdate"
        }
    }
}

extension AuthMode {
    public var protocolName: String {
        switch self {
        case .imSession: return "im"
        case .independent: return "independent"
        case .anonymous: return "anonymous"
        }
    }

    public init?(protocolName: String) {
        guard let m = AuthMode.allCases.first(where: { $0.protocolName == protocolName }) else { return nil }
        self = m
    }
}
