import ParleyRooms

/// R1: a room as the API returns it.
struct RoomJSON: Encodable, Sendable {
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
        roomId = AppScope.local(i.roomId)  // the id the app knows (A8)
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
