/// A room member (docs/protocol.md "Member"; SPEC M3).
public struct Member: Sendable, Hashable, Codable {
    /// The member roles of SPEC M1 as the wire spells them.
    public enum Kind: String, Sendable, Hashable, Codable {
        case creator, manager, common, limited, visitor
    }

    public var userId: String
    public var nickname: String
    public var avatar: String
    public var ext: String
    public var type: Kind
    public var isMuted: Bool
    public var isTempMuted: Bool
    /// Remaining temporary mute in seconds.
    public var tempMuteDuration: Int64
    public var isInBlackList: Bool
    public var isOnline: Bool
    public var enterTime: Int64
    /// The anchor to pass to `fetchChatroomMembers` for the page after this member.
    public var pageKey: Int64
}

/// The member lists of `fetchChatroomMembers` (SPEC M4).
public enum MemberQueryType: String, Sendable, Hashable, Codable {
    case regular
    case temp
    case regularOnline
    case unregularReversed
}
