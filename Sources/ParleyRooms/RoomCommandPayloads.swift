/// R1 / R2: create a room (app server only).
public struct CreateRoom: Sendable, Hashable {
    public var roomId: String
    public var creator: String
    public var name: String
    public var announcement: String = ""
    public var ext: String = ""
    public var broadcastUrl: String = ""
    public var queueModificationLevel: QueueModificationLevel = .anyone

    public init(roomId: String, creator: String, name: String, announcement: String = "", ext: String = "",
                broadcastUrl: String = "", queueModificationLevel: QueueModificationLevel = .anyone) {
        self.roomId = roomId
        self.creator = creator
        self.name = name
        self.announcement = announcement
        self.ext = ext
        self.broadcastUrl = broadcastUrl
        self.queueModificationLevel = queueModificationLevel
    }
}

/// R4: change room info; nil fields stay as they are.
public struct UpdateRoom: Sendable, Hashable {
    public var roomId: String
    public var name: String?
    public var announcement: String?
    public var broadcastUrl: String?
    public var ext: String?
    public var queueModificationLevel: QueueModificationLevel?
    public var needNotify: Bool
    public var notifyExt: String

    public init(roomId: String, name: String? = nil, announcement: String? = nil, broadcastUrl: String? = nil,
                ext: String? = nil, queueModificationLevel: QueueModificationLevel? = nil,
                needNotify: Bool = true, notifyExt: String = "") {
        self.roomId = roomId
        self.name = name
        self.announcement = announcement
        self.broadcastUrl = broadcastUrl
        self.ext = ext
        self.queueModificationLevel = queueModificationLevel
        self.needNotify = needNotify
        self.notifyExt = notifyExt
    }
}

/// N4 / E7: per-room overrides of the app policy (app server only); nil follows the app.
public struct RoomPolicyUpdate: Sendable, Hashable {
    public var roomId: String
    public var enterExitNotifications: Bool?
    public var devicePolicy: DevicePolicy?

    public init(roomId: String, enterExitNotifications: Bool? = nil, devicePolicy: DevicePolicy? = nil) {
        self.roomId = roomId
        self.enterExitNotifications = enterExitNotifications
        self.devicePolicy = devicePolicy
    }
}

/// E1: enter a room; identity, device and auth mode come from the context.
public struct EnterRoom: Sendable, Hashable {
    public var roomId: String
    public var nickname: String
    public var avatar: String
    public var roomExt: String
    public var roomNotifyExt: String
    /// C5: the session this enter takes over — the same user's session on an edge that is handing its
    /// clients to others. It leaves without an exit (no 302/301 for the user, its transient queue elements
    /// kept); empty: a plain enter.
    public var replacing: String

    public init(roomId: String, nickname: String = "", avatar: String = "", roomExt: String = "",
                roomNotifyExt: String = "", replacing: String = "") {
        self.roomId = roomId
        self.nickname = nickname
        self.avatar = avatar
        self.roomExt = roomExt
        self.roomNotifyExt = roomNotifyExt
        self.replacing = replacing
    }
}

/// N1: send a chat message. `fromUser` names the sender when the app server sends.
public struct SendMessage: Sendable, Hashable {
    public var roomId: String
    public var type: MessageType
    public var clientMessageId: String
    public var body: String
    public var ext: String
    public var fromUser: String
    /// D3: what the edges may shed above the room's delivered-rate ceiling.
    public var priority: MessagePriority

    public init(roomId: String, type: MessageType = .text, clientMessageId: String = "", body: String,
                ext: String = "", fromUser: String = "", priority: MessagePriority = .normal) {
        self.roomId = roomId
        self.type = type
        self.clientMessageId = clientMessageId
        self.body = body
        self.ext = ext
        self.fromUser = fromUser
        self.priority = priority
    }
}

/// M4: which members a page lists.
public enum MemberQueryKind: UInt8, Sendable, CaseIterable {
    /// Fixed members, newest first.
    case regular = 0
    /// Non-fixed online members, oldest first.
    case temp = 1
    /// Online fixed members, newest first.
    case regularOnline = 2
    /// Non-fixed online members, newest first.
    case unregularReversedOrder = 3
}

/// M4: one page of members; `anchor` is the last member's pageKey (0 = first page), exclusive.
public struct FetchMembers: Sendable, Hashable {
    public var roomId: String
    public var kind: MemberQueryKind
    public var anchor: UInt64
    public var limit: Int

    public init(roomId: String, kind: MemberQueryKind, anchor: UInt64 = 0, limit: Int) {
        self.roomId = roomId
        self.kind = kind
        self.anchor = anchor
        self.limit = limit
    }
}

/// M5 / R6: a room and a list of user ids.
public struct RoomUsers: Sendable, Hashable {
    public var roomId: String
    public var userIds: [String]

    public init(roomId: String, userIds: [String]) {
        self.roomId = roomId
        self.userIds = userIds
    }
}

/// M6: update my member info; nil fields stay.
public struct UpdateMyMemberInfo: Sendable, Hashable {
    public var roomId: String
    public var nickname: String?
    public var avatar: String?
    public var ext: String?
    public var needNotify: Bool
    public var notifyExt: String

    public init(roomId: String, nickname: String? = nil, avatar: String? = nil, ext: String? = nil,
                needNotify: Bool = true, notifyExt: String = "") {
        self.roomId = roomId
        self.nickname = nickname
        self.avatar = avatar
        self.ext = ext
        self.needNotify = needNotify
        self.notifyExt = notifyExt
    }
}

/// M2 / M7 / M8: an operation on one member (mark manager / common, block, mute, kick, temp mute).
/// `duration` is minutes for a block (0 = permanent), seconds for a temporary mute (0 lifts it),
/// and must be 0 for the others.
public struct MemberUpdate: Sendable, Hashable {
    public var roomId: String
    public var userId: String
    public var enable: Bool
    public var duration: UInt64
    public var needNotify: Bool
    public var notifyExt: String

    public init(roomId: String, userId: String, enable: Bool = true, duration: UInt64 = 0,
                needNotify: Bool = true, notifyExt: String = "") {
        self.roomId = roomId
        self.userId = userId
        self.enable = enable
        self.duration = duration
        self.needNotify = needNotify
        self.notifyExt = notifyExt
    }
}

/// R5 / R6: room-wide mute or allowlist change.
public struct RoomSwitch: Sendable, Hashable {
    public var roomId: String
    public var enable: Bool
    public var userIds: [String]
    public var needNotify: Bool
    public var notifyExt: String

    public init(roomId: String, enable: Bool, userIds: [String] = [], needNotify: Bool = true,
                notifyExt: String = "") {
        self.roomId = roomId
        self.enable = enable
        self.userIds = userIds
        self.needNotify = needNotify
        self.notifyExt = notifyExt
    }
}

/// M9: mute a user across every room of the shard (app server only); minutes 0 = permanent.
public struct GlobalMute: Sendable, Hashable {
    public var userId: String
    public var enable: Bool
    public var minutes: UInt64
    public var extra: String

    public init(userId: String, enable: Bool, minutes: UInt64 = 0, extra: String = "") {
        self.userId = userId
        self.enable = enable
        self.minutes = minutes
        self.extra = extra
    }
}

/// Q2: offer or update one element.
public struct QueueOffer: Sendable, Hashable {
    public var roomId: String
    public var key: String
    public var value: String
    public var transient: Bool

    public init(roomId: String, key: String, value: String, transient: Bool = false) {
        self.roomId = roomId
        self.key = key
        self.value = value
        self.transient = transient
    }
}

/// Q4: update existing elements in one go.
public struct QueueBatchUpdate: Sendable, Hashable {
    public var roomId: String
    public var elements: [QueueEntry]
    public var needNotify: Bool
    public var notifyExt: String

    public init(roomId: String, elements: [QueueEntry], needNotify: Bool = true, notifyExt: String = "") {
        self.roomId = roomId
        self.elements = elements
        self.needNotify = needNotify
        self.notifyExt = notifyExt
    }
}

/// N5: a history query; `startTime` 0 = now. Descending lists entries older than startTime,
/// newest first; ascending lists entries newer than startTime, oldest first.
public struct HistoryQuery: Sendable, Hashable {
    public var roomId: String
    public var startTime: Int64
    public var limit: Int
    public var ascending: Bool
    /// Empty = every type.
    public var types: [MessageType]

    public init(roomId: String, startTime: Int64 = 0, limit: Int, ascending: Bool = false,
                types: [MessageType] = []) {
        self.roomId = roomId
        self.startTime = startTime
        self.limit = limit
        self.ascending = ascending
        self.types = types
    }
}
