import ParleyWire

/// Every limit of the room domain in one place, with the seeds' values as defaults.
///
/// Where the English (000) and Chinese (003) NIM guides differ we take the stricter reading
/// and say so in docs/rooms.md. Sizes are UTF-8 bytes.
public struct RoomLimits: Sendable, Hashable, Codable {
    /// E3: rooms one user may be in at once.
    public var maxRoomsPerUser: Int = 10
    /// M1: fixed members (creator, managers, common, limited) per room.
    public var maxFixedMembers: Int = 1000
    /// M5: ids per members-by-ids request.
    public var maxMemberIdsPerRequest: Int = 20
    /// M4: members per page.
    public var maxMembersPageLimit: Int = 100
    /// N5: messages per history query.
    public var maxHistoryLimit: Int = 100
    /// N5: how long history is kept, in milliseconds (10 days).
    public var historyRetentionMillis: Int64 = 10 * 24 * 3600 * 1000
    /// N5: history entries kept per room at most, so memory stays bounded.
    public var maxHistoryPerRoom: Int = 5000
    /// R1: room ext.
    public var maxRoomExtBytes: Int = 4096
    /// R1: room name.
    public var maxRoomNameBytes: Int = 128
    /// R1: announcement.
    public var maxAnnouncementBytes: Int = 4096
    /// R1: broadcast URL.
    public var maxBroadcastUrlBytes: Int = 1024
    /// Room, user and session ids.
    public var maxIdBytes: Int = 128
    /// E1 / M6: nickname.
    public var maxNicknameBytes: Int = 64
    /// E1 / M6: avatar URL.
    public var maxAvatarBytes: Int = 1024
    /// E1 / M6: member ext (roomExt).
    public var maxMemberExtBytes: Int = 4096
    /// notifyExt of every notification-producing command (and E1's roomNotifyExt).
    public var maxNotifyExtBytes: Int = 2048
    /// N1: message body.
    public var maxMessageBodyBytes: Int = 5000
    /// N1: message ext.
    public var maxMessageExtBytes: Int = 4096
    /// Q2: key of a single offer / update.
    public var maxQueueKeyBytes: Int = 32
    /// Q4: key inside a batch update.
    public var maxQueueBatchKeyBytes: Int = 128
    /// Q2 / Q4: value of a queue element (003 says 4096; 000's "4069" is read as a typo).
    public var maxQueueValueBytes: Int = 4096
    /// Q4: elements per batch update.
    public var maxQueueBatchElements: Int = 100
    /// Q4: notifyExt of a batch update.
    public var maxQueueNotifyExtBytes: Int = 2048
    /// Queue init: largest size a queue may be given, and the size of a queue never initialised.
    public var maxQueueSize: Int = 1000
    /// M8 / RC: longest block, mute or global mute, in minutes (one month).
    public var maxBanMinutes: Int = 43_200
    /// R6: user ids per allowlist change.
    public var maxAllowlistIdsPerRequest: Int = 20
    /// X2: history items one resume request returns at most (the edge pages beyond it).
    public var maxResumeItems: Int = 1000

    public init() {}
}

extension RoomLimits: BinaryCodable {
    // Field order is the wire order; append new limits at the end and bump the snapshot version.
    private static var fields: [WritableKeyPath<RoomLimits, Int>] {
        [
        \.maxRoomsPerUser, \.maxFixedMembers, \.maxMemberIdsPerRequest, \.maxMembersPageLimit,
        \.maxHistoryLimit, \.maxHistoryPerRoom, \.maxRoomExtBytes, \.maxRoomNameBytes,
        \.maxAnnouncementBytes, \.maxBroadcastUrlBytes, \.maxIdBytes, \.maxNicknameBytes,
        \.maxAvatarBytes, \.maxMemberExtBytes, \.maxNotifyExtBytes, \.maxMessageBodyBytes,
        \.maxMessageExtBytes, \.maxQueueKeyBytes, \.maxQueueBatchKeyBytes, \.maxQueueValueBytes,
        \.maxQueueBatchElements, \.maxQueueNotifyExtBytes, \.maxQueueSize, \.maxBanMinutes,
        \.maxAllowlistIdsPerRequest, \.maxResumeItems,
        ]
    }

    public func encode(to w: inout ByteWriter) {
        w.write(historyRetentionMillis)
        for field in Self.fields { w.write(self[keyPath: field]) }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init()
        historyRetentionMillis = try r.readInt64()
        for field in Self.fields { self[keyPath: field] = try r.readInt() }
        guard isValid else { throw .invalidValue("limits out of range") }
    }

    /// Every limit is non-negative and durations stay far from overflowing the expiry arithmetic
    /// (bans up to 100 years, retention up to 1000 years).
    public var isValid: Bool {
        Self.fields.allSatisfy { self[keyPath: $0] >= 0 } && maxBanMinutes <= 100 * 366 * 24 * 60
            && (0 ... 1000 * 366 * 24 * 3_600_000).contains(historyRetentionMillis)
    }
}
