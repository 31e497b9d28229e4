/// What `enterChatroom` needs (the seed's NIMChatroomEnterRequest).
public struct ChatroomEnterRequest: Sendable, Hashable {
    public var roomId: String
    /// The seed's roomNickname / roomAvatar; required for anonymous users.
    public var nickname: String?
    public var avatar: String?
    /// My member ext for this entry only, carried on every message and notification I cause (E1).
    public var roomExt: String?
    /// Carried in the 301 notification of this enter (E1).
    public var roomNotifyExt: String?
    public var auth: ChatroomAuth
    /// Automatic re-enter attempts after a lost connection: 3 by default, 0 never (the seed's retryCount).
    public var retryCount: Int

    public init(roomId: String, auth: ChatroomAuth, nickname: String? = nil, avatar: String? = nil,
                roomExt: String? = nil, roomNotifyExt: String? = nil, retryCount: Int = 3) {
        self.roomId = roomId
        self.auth = auth
        self.nickname = nickname
        self.avatar = avatar
        self.roomExt = roomExt
        self.roomNotifyExt = roomNotifyExt
        self.retryCount = retryCount
    }
}

/// How a session authenticates (E4, E5; docs/protocol.md "Authentication").
public enum ChatroomAuth: Sendable, Hashable {
    /// E4: the token the app server obtained for its logged-in IM user.
    case im(appKey: String, account: String, token: String)
    /// E5: the seed's NIMChatroomIndependentMode with a username.
    case independent(appKey: String, account: String, token: String)
    /// E5: no username; the server makes up an `anon-…` account. Receives but cannot send.
    case anonymous(appKey: String)

    var json: JSONValue {
        switch self {
        case .im(let appKey, let account, let token):
            .object(["mode": "im", "appKey": .string(appKey), "account": .string(account), "token": .string(token)])
        case .independent(let appKey, let account, let token):
            .object(["mode": "independent", "appKey": .string(appKey), "account": .string(account), "token": .string(token)])
        case .anonymous(let appKey):
            .object(["mode": "anonymous", "appKey": .string(appKey)])
        }
    }
}
