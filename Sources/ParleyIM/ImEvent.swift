/// What a user's online devices hear (seed 004's delegate callbacks and system notifications).
public struct ImEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `onFriendChanged`: the friend (and whether it is one now).
        case friendChanged(friend: String, isFriend: Bool)
        /// `onBlackListChanged`.
        case blocklistChanged
        /// `onMuteListChanged`.
        case muteListChanged
        /// A NIMSystemNotification of type FriendAdd (source, target, NIMUserAddAttachment's operation type),
        /// with the request's message; `seq` is its place in the user's sequence.
        case friendNotification(seq: UInt64, source: String, target: String, operation: FriendOperation, message: String)
    }

    /// The user whose devices hear it.
    public var account: String
    public var kind: Kind

    public init(account: String, kind: Kind) {
        self.account = account
        self.kind = kind
    }
}
