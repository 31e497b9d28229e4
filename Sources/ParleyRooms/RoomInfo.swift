import ParleyWire

/// R1 / Q7: who may change the queue.
public enum QueueModificationLevel: UInt8, Sendable, CaseIterable {
    case anyone = 0
    case managers = 1
}

/// R1: the stored description of a room (the online count is derived, see `RoomInfoView`).
public struct RoomInfo: Sendable, Hashable {
    public var roomId: String
    public var name: String
    public var announcement: String
    public var creator: String
    public var ext: String
    public var broadcastUrl: String
    public var queueModificationLevel: QueueModificationLevel
    /// R5: room-wide mute.
    public var isMuted: Bool
    public var isOpen: Bool
    /// N4: per-room switch for 301 / 302; nil follows the app policy.
    public var enterExitNotifications: Bool?
    /// E7: per-room device policy; nil follows the app policy.
    public var devicePolicy: DevicePolicy?

    public init(roomId: String, name: String, announcement: String = "", creator: String, ext: String = "",
                broadcastUrl: String = "", queueModificationLevel: QueueModificationLevel = .anyone,
                isMuted: Bool = false, isOpen: Bool = true, enterExitNotifications: Bool? = nil,
                devicePolicy: DevicePolicy? = nil) {
        self.roomId = roomId
        self.name = name
        self.announcement = announcement
        self.creator = creator
        self.ext = ext
        self.broadcastUrl = broadcastUrl
        self.queueModificationLevel = queueModificationLevel
        self.isMuted = isMuted
        self.isOpen = isOpen
        self.enterExitNotifications = enterExitNotifications
        self.devicePolicy = devicePolicy
    }
}

/// R1 / R3: room info as fetched, with the derived online user count.
public struct RoomInfoView: Sendable, Hashable {
    public var info: RoomInfo
    /// Distinct users with at least one online session.
    public var onlineUserCount: Int
    /// The room's latest sequence number (X2: a client resumes after the last one it saw).
    public var seq: UInt64 = 0
}

extension RoomInfo: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId)
        w.write(name)
        w.write(announcement)
        w.write(creator)
        w.write(ext)
        w.write(broadcastUrl)
        w.write(queueModificationLevel.rawValue)
        w.write(isMuted)
        w.write(isOpen)
        w.write(enterExitNotifications)
        w.write(UInt8(devicePolicy.map { $0.rawValue + 1 } ?? 0))
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        roomId = try r.readString()
        name = try r.readString()
        announcement = try r.readString()
        creator = try r.readString()
        ext = try r.readString()
        broadcastUrl = try r.readString()
        queueModificationLevel = try r.readEnum()
        isMuted = try r.readBool()
        isOpen = try r.readBool()
        enterExitNotifications = try r.readOptionalBool()
        let policy = try r.readByte()
        if policy == 0 {
            devicePolicy = nil
        } else {
            guard let p = DevicePolicy(rawValue: policy - 1) else { throw .badTag("DevicePolicy", UInt64(policy)) }
            devicePolicy = p
        }
    }
}
