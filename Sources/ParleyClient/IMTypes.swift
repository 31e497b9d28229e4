/// Issue 19: what the IM side of the SDK reads (docs/protocol.md, "IM" and "Teams"; docs/sdk.md).

/// One item of the user's conversation log: a one-to-one message (received, or sent from any of the
/// user's devices), a FriendAdd system notification, or a team notice.
public struct IMItem: Sendable, Hashable, Decodable {
    public var seq: Int64
    public var time: Int64
    /// "message", "friendAdd" or "teamNotice".
    public var kind: String
    public var from: String?
    public var to: String?
    public var msgId: String?
    public var type: String?
    public var body: String?
    public var ext: String?
    /// A message's place in the receiver's log (the same in the sender's copy).
    public var receiverSeq: Int64?
    /// False for a message from a user on the receiver's do-not-disturb list: no push, no sound.
    public var alert: Bool?
    public var source: String?
    public var target: String?
    /// FriendAdd: the seed's NIMUserOperation (1 add, 2 request, 3 verify, 4 reject). Team notice: NIM's
    /// system notification type (0 apply, 1 application rejected, 2 invite, 3 invitation rejected).
    public var operation: Int?
    public var msg: String?
    public var teamId: String?
}

/// The seed's NIMUserOperation.
public enum FriendOperation: String, Sendable, CaseIterable {
    case add, request, verify, reject
}

public struct IMFriend: Sendable, Hashable, Decodable {
    public var account: String
    public var remark: String
    public var since: Int64
}

public struct IMFriendRequest: Sendable, Hashable, Decodable {
    public var account: String
    public var message: String
    public var time: Int64
}

/// The user's relationships: friends, friend requests both ways, blocklist, do-not-disturb list, teams.
public struct IMRelations: Sendable, Hashable, Decodable {
    public var friends: [IMFriend]
    public var incoming: [IMFriendRequest]
    public var outgoing: [IMFriendRequest]
    public var blocked: [String]
    public var muted: [String]
    public var teams: [String]
}

/// One item of a team's log: a member's message or a team notification (NIMTeamNotificationContent).
public struct TeamItem: Sendable, Hashable, Decodable {
    public var seq: Int64
    public var time: Int64
    /// "message" or "notification".
    public var kind: String
    public var from: String?
    public var msgId: String?
    public var type: String?
    public var body: String?
    public var ext: String?
    /// NIMTeamOperationType: 0 invite, 1 kick, 2 leave, 3 update, 4 dismiss, 5 applyPass, 6 transferOwner,
    /// 7 addManager, 8 removeManager, 9 acceptInvitation, 10 mute.
    public var operation: Int?
    public var source: String?
    public var targets: [String]?
    /// Set only by the app server (through the server API).
    public var notifyExt: String?
    /// NIMTeamUpdateTag (as a string) → value: an Update's changed fields, a Mute's `101: "1"/"0"`.
    public var attachment: [String: String]?
}

/// NIMTeamNotifyState.
public enum TeamNotifyState: String, Sendable, CaseIterable, Decodable {
    case all, none, onlyManager
}

public struct TeamMemberInfo: Sendable, Hashable, Decodable {
    public var account: String
    /// "owner", "manager" or "normal".
    public var role: String
    public var muted: Bool
    public var notifyState: TeamNotifyState
    public var joinedAt: Int64
}

/// A team as a member reads it, with the log items asked for.
public struct TeamSnapshot: Sendable, Hashable, Decodable {
    public var teamId: String
    /// "advanced" or "superTeam" (nil from a server older than supergroups).
    public var type: String?
    public var name: String
    public var intro: String
    public var announcement: String
    public var avatar: String
    public var joinMode: String
    public var inviteMode: String
    public var beInviteMode: String
    public var updateInfoMode: String
    public var muteAll: Bool
    public var owner: String
    public var members: [TeamMemberInfo]
    public var items: [TeamItem]
    public var nextSeq: Int64
}

/// What `createTeam` sets (NIMCreateTeamOption); nil leaves the server's default.
public struct TeamOptions: Sendable, Hashable {
    public var intro: String?
    public var announcement: String?
    public var avatar: String?
    /// "noAuth", "needAuth" (default) or "rejectAll".
    public var joinMode: String?
    /// "manager" (default) or "all".
    public var inviteMode: String?
    /// "needAuth" (default) or "noAuth".
    public var beInviteMode: String?
    /// "manager" (default) or "all".
    public var updateInfoMode: String?
    /// "advanced" (default) or "superTeam": a supergroup of up to 10,000 members (issue 38, docs/im.md).
    public var type: String?

    public init(intro: String? = nil, announcement: String? = nil, avatar: String? = nil, joinMode: String? = nil,
                inviteMode: String? = nil, beInviteMode: String? = nil, updateInfoMode: String? = nil, type: String? = nil) {
        self.type = type
        self.intro = intro
        self.announcement = announcement
        self.avatar = avatar
        self.joinMode = joinMode
        self.inviteMode = inviteMode
        self.beInviteMode = beInviteMode
        self.updateInfoMode = updateInfoMode
    }
}

/// What `updateTeam` changes; the Update notification's attachment lists exactly these.
public struct TeamUpdate: Sendable, Hashable {
    public var name: String?
    public var intro: String?
    public var announcement: String?
    public var avatar: String?
    public var joinMode: String?
    public var inviteMode: String?
    public var beInviteMode: String?
    public var updateInfoMode: String?
    public var muteAll: Bool?

    public init(name: String? = nil, intro: String? = nil, announcement: String? = nil, avatar: String? = nil,
                joinMode: String? = nil, inviteMode: String? = nil, beInviteMode: String? = nil,
                updateInfoMode: String? = nil, muteAll: Bool? = nil) {
        self.name = name
        self.intro = intro
        self.announcement = announcement
        self.avatar = avatar
        self.joinMode = joinMode
        self.inviteMode = inviteMode
        self.beInviteMode = beInviteMode
        self.updateInfoMode = updateInfoMode
        self.muteAll = muteAll
    }
}

/// The seed's NIMSessionType for a send.
public enum IMSession: Sendable, Hashable {
    case p2p(String)
    case team(String)
}

/// What the IM side reports without being asked (the seed's NIMUserManagerDelegate, NIMChatManagerDelegate,
/// NIMTeamManagerDelegate, NIMSystemNotificationManagerDelegate and the login's connection states).
public enum IMEvent: Sendable, Hashable {
    /// A new item of the user's log, in `seq` order, each once (live or synced after a login or reconnect).
    case item(IMItem)
    /// onFriendChanged.
    case friendChanged(friend: String, isFriend: Bool)
    case blocklistChanged
    case muteListChanged
    /// The user joined or left a team.
    case teamMembership(teamId: String, isMember: Bool)
    /// A team's message or notification, per team in `seq` order, each once; `alert` false when this member's
    /// notify state silences it (team DND).
    case teamItem(teamId: String, TeamItem, alert: Bool)
    /// Items `fromSeq...toSeq` of the user's log are no longer kept on the server (the device was away longer
    /// than the retention): they cannot be synced.
    case historyGone(fromSeq: Int64, toSeq: Int64)
    case connectionState(IMConnectionState)
    /// Issue 38 (NIM's P2P receipt): `reader` read the one-to-one conversation with `peer` through this
    /// sequence of the reader's log — the peer read this user's messages whose `receiverSeq` is at most it, or
    /// (reader == this user) another device of this user marked it.
    case p2pRead(peer: String, reader: String, throughSeq: Int64)
    /// Issue 38 (seed 001's team receipts): `reader` read the team's messages through this team sequence:
    /// refresh the receipts of this user's messages (`teamReceipts`).
    case teamRead(teamId: String, reader: String, throughSeq: Int64)
    /// Issue 38 item 4: the user's conversations with their unread counts, read after every login and
    /// re-login (NIM's recent sessions); later changes arrive as items and read events.
    case conversations(IMConversationList)
}

/// Who read one team message (seed 001's NIMTeamMessageReceipt: read and unread counts and who).
public struct TeamReceipt: Sendable, Hashable, Decodable {
    public var seq: Int64
    public var from: String
    public var readCount: Int
    public var unreadCount: Int
    public var readers: [String]
    public var unread: [String]
}

/// One of the user's one-to-one conversations (issue 38): its newest message, the user's unread count and
/// both read positions.
public struct IMConversation: Sendable, Hashable, Decodable {
    public var peer: String
    public var last: IMItem
    public var unread: Int
    /// This user's position in its own log.
    public var readThrough: Int64
    /// The peer's position in its log: this user's messages whose `receiverSeq` is at most this were read.
    public var peerReadThrough: Int64
}

/// One of the user's teams as a conversation (issue 38 item 4): its newest message, the user's unread count
/// (others' messages after its position, since it joined) and its position.
public struct IMTeamConversation: Sendable, Hashable, Decodable {
    public var teamId: String
    public var last: TeamItem?
    public var unread: Int
    public var readThrough: Int64
}

/// What `conversations()` answers: the one-to-one conversations and the teams, each newest first.
public struct IMConversationList: Sendable, Hashable, Decodable {
    public var oneToOne: [IMConversation]
    public var teams: [IMTeamConversation]

    enum CodingKeys: String, CodingKey { case oneToOne = "conversations", teams }
}

/// The login's connection, as the seed's NIMLoginStep reports it.
public enum IMConnectionState: Sendable, Hashable {
    case loggingIn
    case loggedIn
    case loginFailed(ChatroomError)
    case lost
}
