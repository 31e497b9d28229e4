/// What a user's online devices hear (seed 004's delegate callbacks and system notifications).
public struct ImEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `onFriendChanged`: the friend (and whether it is one now).
        case friendChanged(friend: String, isFriend: Bool)
        /// `onBlackListChanged`.
        case blocklistChanged
        /// `onMuteListChanged`.
        case muteListChanged
        /// The user is a member of the team now (or no longer): its devices follow (or stop following) the
        /// team's messages and notifications.
        /// `fromSeq` (a join): the team log's first item for the new member.
        case teamMembership(teamId: String, isMember: Bool, fromSeq: UInt64)
        /// A new item of the user's conversation log: a one-to-one message (received, or the copy of one the
        /// user sent from another device) or a system notification (FriendAdd: source, target,
        /// NIMUserAddAttachment's operation type, the request's message).
        case item(ImLogItem)
        /// Issue 38: `reader` read the conversation through `throughSeq` (a team's sequence; one-to-one, the
        /// reader's log's). Heard by the reader's devices, a one-to-one peer's, a team message's sender's.
        case read(Conversation, reader: String, throughSeq: UInt64)
    }

    /// The user whose devices hear it.
    public var account: String
    public var kind: Kind

    public init(account: String, kind: Kind) {
        self.account = account
        self.kind = kind
    }
}
