import ParleyRooms

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
