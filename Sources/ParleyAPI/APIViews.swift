import ParleyRooms

/// R1: a room as the API returns it.
struct RoomView: Encodable, Sendable {
    var roomId: String
    var name: String
    var announcement: String
    var creator: String
    var ext: String
    var broadcastUrl: String
    var queueLevel: String
    /// R5: room-wide mute.
    var muted: Bool
    /// R2: false once closed.
    var valid: Bool
    var onlineUserCount: Int
    var seq: UInt64
    /// N4: nil follows the app policy.
    var enterExitNotifications: Bool?
    /// E7: nil follows the app policy.
    var devicePolicy: String?

    init(_ v: RoomInfoView) {
        let i = v.info
        roomId = i.roomId
        name = i.name
        announcement = i.announcement
        creator = i.creator
        ext = i.ext
        broadcastUrl = i.broadcastUrl
        queueLevel = FieldRule.name(of: i.queueModificationLevel, in: FieldRule.queueLevels)
        muted = i.isMuted
        valid = i.isOpen
        onlineUserCount = v.onlineUserCount
        seq = v.seq
        enterExitNotifications = i.enterExitNotifications
        devicePolicy = i.devicePolicy.map { FieldRule.name(of: $0, in: FieldRule.devicePolicies) }
    }
}

/// M3: a member record.
struct MemberJSON: Encodable, Sendable {
    var accid: String
    var nick: String
    var avatar: String
    var ext: String
    var type: String
    var muted: Bool
    var tempMuted: Bool
    var tempMuteTtl: UInt64
    var blocked: Bool
    var online: Bool
    var enterTime: Int64
    /// M4: the next page's anchor.
    var pageKey: UInt64

    init(_ m: MemberView) {
        accid = m.userId
        nick = m.roomNickname
        avatar = m.roomAvatar
        ext = m.roomExt
        type = switch m.type {
        case .creator: "creator"
        case .manager: "manager"
        case .common: "common"
        case .limited: "limited"
        case .visitor: "visitor"
        }
        muted = m.isMuted
        tempMuted = m.isTempMuted
        tempMuteTtl = m.tempMuteDuration
        blocked = m.isInBlackList
        online = m.isOnline
        enterTime = m.enterTime
        pageKey = m.pageKey
    }
}

/// N5: one history item: a message, or a notification (type 301-320).
struct HistoryJSON: Encodable, Sendable {
    var seq: UInt64
    var time: Int64
    /// A message type name, or "notification".
    var type: String
    var fromAccid: String
    var fromNick: String
    var msgId: String
    var body: String
    var ext: String
    /// Notifications only: the N3 event type.
    var eventType: Int?
    var targets: [String]?
    var notifyExt: String?

    init(_ item: HistoryItem) {
        switch item {
        case .message(let m):
            seq = m.seq
            time = m.time
            type = FieldRule.name(of: m.type, in: FieldRule.historyTypes)
            fromAccid = m.senderId
            fromNick = m.senderNickname
            msgId = m.clientMessageId
            body = m.body
            ext = m.ext
        case .notification(let n):
            seq = n.seq
            time = n.time
            type = "notification"
            fromAccid = n.source.userId
            fromNick = n.source.nickname
            msgId = ""
            body = ""
            ext = n.sourceRoomExt
            eventType = Int(n.type.rawValue)
            targets = n.targets.map(\.userId)
            notifyExt = n.notifyExt
        }
    }
}

struct QueueItemJSON: Codable, Sendable {
    var key: String
    var value: String
}
