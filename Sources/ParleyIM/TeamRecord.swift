/// One team (seed 001) on its team shard: its info and modes, members with roles, mutes and notify states,
/// pending invitations and applications, and the team's message log (messages and team notifications, by
/// the team's own sequence).
public struct TeamRecord: Sendable, Equatable {
    public internal(set) var info: TeamInfo
    public internal(set) var owner: String
    public internal(set) var members: [String: TeamMember] = [:]
    /// Invitee → who invited it and when (be-invite mode `needAuth`).
    public internal(set) var invitations: [String: TeamInvitation] = [:]
    /// Applicant → its message and when (join mode `needAuth`).
    public internal(set) var applications: [String: FriendRequest] = [:]
    public internal(set) var log = SequencedLog<TeamLogKind>()
    /// Members whose notify state is not `all` (derived from `members`, never in a snapshot): a message's
    /// `noAlert` list is made from them, not from every member — a supergroup has thousands.
    private(set) var quiet: Set<String> = []

    init(info: TeamInfo, owner: String, at time: Int64) {
        self.info = info
        self.owner = owner
        members[owner] = TeamMember(role: .owner, joinedAt: time)
    }

    public var memberList: [String] { members.keys.sorted() }

    /// Sets a member's notify state, keeping `quiet` in step.
    mutating func setNotify(_ state: TeamNotifyState, of account: String) {
        members[account]?.notify = state
        if state == .all { quiet.remove(account) } else if members[account] != nil { quiet.insert(account) }
    }

    /// Removes a member.
    mutating func remove(_ account: String) {
        members[account] = nil
        quiet.remove(account)
    }

    /// The derived parts, from `members` (after a restore).
    mutating func rederive() {
        quiet = Set(members.compactMap { $0.value.notify == .all ? nil : $0.key })
    }

    /// Who a team message or notification does not alert (seed 001's team DND): `none` never, `onlyManager`
    /// unless `byManager`, and `also` (the sender of a message), sorted.
    func silent(byManager: Bool, also: String? = nil) -> [String] {
        var list = quiet.filter { members[$0]!.notify == .none || !byManager }
        if let also, members[also] != nil, !list.contains(also) { list.insert(also) }
        return list.sorted()
    }

    func role(of account: String) -> TeamRole? { members[account]?.role }
}

public struct TeamInfo: Sendable, Equatable {
    /// Issue 38: an advanced team or a supergroup, set at creation.
    public var type = TeamType.advanced
    public var name: String
    public var intro: String = ""
    public var announcement: String = ""
    public var avatar: String = ""
    public var joinMode: TeamJoinMode = .needAuth
    public var inviteMode: TeamPermission = .manager
    public var beInviteMode: TeamBeInviteMode = .needAuth
    public var updateInfoMode: TeamPermission = .manager
    /// Mute all: only the owner and managers may send.
    public var muteAll = false

    public init(name: String) { self.name = name }
}

/// Seed 001's group session types that Parley builds (NIM's discussion group is retired): NIM's advanced team
/// and the supergroup (`NIMSessionTypeSuperTeam`) — a team of up to `ImLimits.maxSuperTeamMembers` whose
/// events reach the edges without its member list (docs/im.md, "Supergroups").
public enum TeamType: UInt8, Sendable, Equatable, CaseIterable {
    case advanced = 0, superTeam = 1

    /// The protocol's and the server API's name.
    public var name: String { self == .advanced ? "advanced" : "superTeam" }

    public init?(name: String) {
        guard let type = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = type
    }
}

/// NIMTeamJoinMode.
public enum TeamJoinMode: UInt8, Sendable, Equatable, CaseIterable { case noAuth = 0, needAuth = 1, rejectAll = 2 }
/// NIMTeamInviteMode / NIMTeamUpdateInfoMode: who may.
public enum TeamPermission: UInt8, Sendable, Equatable, CaseIterable { case manager = 0, all = 1 }
/// NIMTeamBeInviteMode: whether an invitee must accept.
public enum TeamBeInviteMode: UInt8, Sendable, Equatable, CaseIterable { case needAuth = 0, noAuth = 1 }

/// NIMTeamMemberType.
public enum TeamRole: UInt8, Sendable, Equatable, Comparable, CaseIterable {
    case normal = 0, manager = 1, owner = 2
    public static func < (a: TeamRole, b: TeamRole) -> Bool { a.rawValue < b.rawValue }
}

/// NIMTeamNotifyState: which delivered team messages alert this member (receipt and unread unchanged).
public enum TeamNotifyState: UInt8, Sendable, Equatable, CaseIterable { case all = 0, none = 1, onlyManager = 2 }

public struct TeamMember: Sendable, Equatable {
    public var role: TeamRole
    public var muted = false
    public var notify = TeamNotifyState.all
    public var joinedAt: Int64
    /// Issue 38: the member's read position in the team's log (`markRead`): messages up to it are read.
    public var readThrough: UInt64 = 0

    public init(role: TeamRole, joinedAt: Int64) {
        self.role = role
        self.joinedAt = joinedAt
    }
}

public struct TeamInvitation: Sendable, Equatable {
    public var inviter: String
    public var postscript: String
    public var at: Int64
}

/// One item of a team's log: a member's message, or the notification message the server made for a team
/// event (NIMTeamNotificationContent).
public typealias TeamLogItem = LogEntry<TeamLogKind>

public enum TeamLogKind: LogContent {
    case message(TeamMessage)
    case notification(TeamNotification)

    /// A member's message by sender and clientMessageId (a notification is never resent).
    public var resendKey: String? {
        guard case .message(let m) = self, !m.clientMessageId.isEmpty else { return nil }
        return m.from + "\u{0}" + m.clientMessageId
    }

    public var parties: LogParties? {
        guard case .message(let m) = self else { return nil }
        return LogParties(from: m.from, to: "")
    }

    /// A team's log is one conversation.
    public static func conversationKey(_ p: LogParties) -> String { "" }

    public var estimatedBytes: Int {
        func of(_ s: String) -> Int { s.utf8.count + 16 }
        switch self {
        case .message(let m):
            return 64 + of(m.from) + of(m.clientMessageId) + of(m.type) + of(m.body) + of(m.ext)
        case .notification(let n):
            return n.targets.reduce(80 + of(n.source) + of(n.notifyExt)) { $0 + of($1) }
                + n.attachment.values.reduce(0) { $0 + 24 + of($1) }
        }
    }
}

public struct TeamMessage: Sendable, Equatable {
    public var from: String
    public var clientMessageId: String
    public var type: String
    public var body: String
    public var ext: String
}

/// NIMTeamNotificationContent: operationType, sourceID, targetIDs, notifyExt (set only through the server
/// API) and the attachment — the changed fields of an Update (NIMUpdateTeamInfoAttachment: tag → value,
/// muting all included), the muted state of a Mute (NIMMuteTeamMemberAttachment).
public struct TeamNotification: Sendable, Equatable {
    public var operation: TeamOperation
    public var source: String
    public var targets: [String]
    public var notifyExt: String
    public var attachment: [TeamUpdateTag: String]

    public init(operation: TeamOperation, source: String, targets: [String], notifyExt: String, attachment: [TeamUpdateTag: String]) {
        self.operation = operation
        self.source = source
        self.targets = targets
        self.notifyExt = notifyExt
        self.attachment = attachment
    }
}

/// NIMTeamOperationType (the values NIM uses).
public enum TeamOperation: UInt8, Sendable, Equatable, CaseIterable {
    case invite = 0, kick = 1, leave = 2, update = 3, dismiss = 4, applyPass = 5, transferOwner = 6,
         addManager = 7, removeManager = 8, acceptInvitation = 9, mute = 10
}

/// NIMTeamUpdateTag, plus `mute` for a Mute notification's attachment.
public enum TeamUpdateTag: UInt8, Sendable, Equatable, Comparable, CaseIterable {
    case name = 3, intro = 14, announcement = 15, joinMode = 16, avatar = 19, inviteMode = 20, beInviteMode = 21,
         updateInfoMode = 22, muteMode = 100, mute = 101
    public static func < (a: TeamUpdateTag, b: TeamUpdateTag) -> Bool { a.rawValue < b.rawValue }
}
