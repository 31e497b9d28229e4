import ParleyWire

/// N3: the notification event types of seed 000.
public enum NotificationType: UInt16, Sendable, CaseIterable {
    case enter = 301, exit, addBlock, removeBlock, addMute, removeMute, addManager, removeManager,
         addCommon, removeCommon, closed, infoUpdated, kicked, addTempMute, removeTempMute,
         memberInfoUpdated, queueChange, roomMuted, roomUnmuted, queueBatchChange
}

/// Q7 / Q3 / Q4: the change type in a 317 / 320 notification's ext.
public enum QueueChangeType: UInt8, Sendable, CaseIterable {
    case offer = 1, poll = 2, drop = 3, update = 4, partClear = 5, batchUpdate = 6
}

/// A user named in a notification (source or target).
public struct NotificationMember: Sendable, Hashable {
    public var userId: String
    public var nickname: String

    public init(userId: String, nickname: String) {
        self.userId = userId
        self.nickname = nickname
    }
}

/// A queue element as carried in notifications and replies.
public struct QueueEntry: Sendable, Hashable {
    public var key: String
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// N3: `ext` of a notification, which the seed uses only for temporary mute and queue events.
public enum NotificationExt: Sendable, Hashable {
    case none
    /// 314 / 315: the temporary mute duration in seconds.
    case muteDuration(seconds: UInt64)
    /// 317: one element changed.
    case queueChange(QueueChangeType, key: String, value: String)
    /// 320: several elements changed (PartClear or BatchUpdate).
    case queueBatch(QueueChangeType, [QueueEntry])
}

/// N3: a chat-room notification message, created only by the server (N2).
public struct RoomNotification: Sendable, Hashable {
    public var type: NotificationType
    /// The room sequence number it was given (X2).
    public var seq: UInt64
    public var time: Int64
    /// The operator; an empty user id means the app server.
    public var source: NotificationMember
    /// E1: the entry-scoped roomExt of the session that caused it.
    public var sourceRoomExt: String
    public var targets: [NotificationMember]
    public var notifyExt: String
    public var ext: NotificationExt

    public init(type: NotificationType, seq: UInt64 = 0, time: Int64 = 0, source: NotificationMember,
                sourceRoomExt: String = "", targets: [NotificationMember] = [], notifyExt: String = "",
                ext: NotificationExt = .none) {
        self.type = type
        self.seq = seq
        self.time = time
        self.source = source
        self.sourceRoomExt = sourceRoomExt
        self.targets = targets
        self.notifyExt = notifyExt
        self.ext = ext
    }
}

extension NotificationMember: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(userId)
        w.write(nickname)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        userId = try r.readString()
        nickname = try r.readString()
    }
}

extension QueueEntry: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(key)
        w.write(value)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        key = try r.readString()
        value = try r.readString()
    }
}

extension NotificationExt: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .none:
            w.write(UInt8(0))
        case .muteDuration(let s):
            w.write(UInt8(1))
            w.write(s)
        case .queueChange(let t, let k, let v):
            w.write(UInt8(2))
            w.write(t.rawValue)
            w.write(k)
            w.write(v)
        case .queueBatch(let t, let items):
            w.write(UInt8(3))
            w.write(t.rawValue)
            w.write(items)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0: self = .none
        case 1: self = .muteDuration(seconds: try r.readUInt64())
        case 2: self = .queueChange(try r.readEnum(), key: try r.readString(), value: try r.readString())
        case 3: self = .queueBatch(try r.readEnum(), try r.readArray())
        case let t: throw .badTag("NotificationExt", UInt64(t))
        }
    }
}

extension RoomNotification: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(UInt64(type.rawValue))
        w.write(seq)
        w.write(time)
        w.write(source)
        w.write(sourceRoomExt)
        w.write(targets)
        w.write(notifyExt)
        w.write(ext)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        type = try r.readEnum16()
        seq = try r.readUInt64()
        time = try r.readInt64()
        source = try r.read()
        sourceRoomExt = try r.readString()
        targets = try r.readArray()
        notifyExt = try r.readString()
        ext = try r.read()
    }
}
