/// Every limit of the room domain in one place, with the seeds' values as defaults.
///
/// Where the English (000) and Chinese (003) NIM guides differ we take the stricter reading
/// and say so in docs/rooms.md.
public struct RoomLimits: Sendable, Hashable, Codable {
    /// E3: rooms one user may be in at once.
    public var maxRoomsPerUser: Int = 10
    /// M1: fixed members (creator, managers, common, limited) per room.
    public var maxFixedMembers: Int = 1000
    /// M5: ids per members-by-ids request.
    public var maxMemberIdsPerRequest: Int = 20
    /// N5: messages per history query.
    public var maxHistoryLimit: Int = 100
    /// N5: how long history is kept, in milliseconds (10 days).
    public var historyRetentionMillis: Int64 = 10 * 24 * 3600 * 1000
    /// R1: room ext.
    public var maxRoomExtBytes: Int = 4096
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

    public init() {}
}
