/// What a member (or a would-be member) asks of a team's shard (seed 001). The operator is the context's
/// actor; `notifyExt` (the notification's extension field) is accepted only from the server API.
public enum TeamCommand: Sendable, Equatable {
    case create(TeamInfo)
    /// Invite (with the invitee's consent when the be-invite mode says so).
    case invite(targets: [String], postscript: String, notifyExt: String)
    case acceptInvitation
    case rejectInvitation
    /// Apply to join (the join mode decides: at once, after a manager's approval, or never).
    case apply(message: String)
    case approveApplication(applicant: String, notifyExt: String)
    case rejectApplication(applicant: String)
    case kick(targets: [String], notifyExt: String)
    case leave(notifyExt: String)
    /// Changed fields as NIM's update attachment has them: tag → value (modes and mute-all as their numbers).
    case update([TeamUpdateTag: String], notifyExt: String)
    case dismiss(notifyExt: String)
    case transferOwner(to: String, leave: Bool, notifyExt: String)
    case addManagers([String], notifyExt: String)
    case removeManagers([String], notifyExt: String)
    case muteMember(String, muted: Bool, notifyExt: String)
    /// updateNotifyState:inTeam: — the member's own alert setting.
    case setNotifyState(TeamNotifyState)
    case send(clientMessageId: String, type: String, body: String, ext: String)
}

extension TeamCommand {
    /// A member's message (`send`): what a device sends most, answered from its connection's loop (issue 35).
    public var isMessage: Bool {
        if case .send = self { return true }
        return false
    }

    /// The accounts this command may make members of the team (`actor`: who issues it): the creator, an
    /// invitee (at once in `noAuth` be-invite mode, later by accepting), the one who accepts or applies, an
    /// approved applicant. Their team count is checked on their own shards before it runs (`maxTeamsPerUser`).
    public func joiningAccounts(actor: String) -> [String] {
        switch self {
        case .create, .acceptInvitation, .apply: [actor]
        case .invite(let targets, _, _): Array(Set(targets)).sorted()
        case .approveApplication(let applicant, _): [applicant]
        case .rejectInvitation, .rejectApplication, .kick, .leave, .update, .dismiss, .transferOwner, .addManagers,
             .removeManagers, .muteMember, .setNotifyState, .send: []
        }
    }
}

/// What a team command produced: the team log items (a message or notifications), who hears them, and the
/// sequence of a message sent.
public struct TeamOutcome: Sendable, Equatable {
    public var events: [TeamEvent] = []
    /// The team sequence of the message `send` stored (or of the first send of a resend).
    public var messageSeq: UInt64?
}

/// A team log item for the team's members' devices, plus `alsoTo` (members that just left, were kicked or
/// the whole team on a dismiss); `noAlert`: members whose notify state silences it (team DND: delivered and
/// counted unread, no alert).
public struct TeamEvent: Sendable, Equatable {
    public var teamId: String
    public var item: TeamLogItem
    public var alsoTo: [String]
    public var noAlert: [String]
}
