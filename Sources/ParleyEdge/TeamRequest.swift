import ParleyIM
import ParleyRooms

/// Issue 19: the team ops of the client protocol (docs/protocol.md, "Teams", seed 001). Ids are the app's own
/// here; the edge scopes the team id and the accounts. A client never sets a notification's notifyExt (only
/// the server API does, seed 001): a team op that names one is refused 14208 `noPermission`, not run without it.
enum TeamRequest {
    static let names: Set<String> = [
        "teamCreate", "teamInvite", "teamAcceptInvitation", "teamRejectInvitation", "teamApply", "teamApproveApplication",
        "teamRejectApplication", "teamKick", "teamLeave", "teamUpdate", "teamDismiss", "teamTransferOwner",
        "teamAddManagers", "teamRemoveManagers", "teamMuteMember", "teamSetNotifyState", "sendTeamMessage", "teamQuery",
    ]

    static let joinModes: [String: TeamJoinMode] = ["noAuth": .noAuth, "needAuth": .needAuth, "rejectAll": .rejectAll]
    static let permissions: [String: TeamPermission] = ["manager": .manager, "all": .all]
    static let beInviteModes: [String: TeamBeInviteMode] = ["needAuth": .needAuth, "noAuth": .noAuth]
    static let notifyStates: [String: TeamNotifyState] = ["all": .all, "none": .none, "onlyManager": .onlyManager]

    /// The op as an `ImOp` (`.team` or `.teamQuery`), ids unscoped.
    static func parse(_ request: ClientRequest) throws(ProtocolError) -> ImOp {
        let f = request.fields
        if f.values["notifyExt"] != nil {
            throw .cluster(ImErrorCode.noPermission.rawValue, "a notification's notifyExt is set only through the server API")
        }
        let teamId = try ImOp.account(f, "teamId")
        if request.op == "teamQuery" {
            let limit = try f.int("limit")
            guard limit >= 1, limit <= 500 else { throw .badValue("limit", "1 … 500") }
            return .teamQuery(teamId: teamId, after: try f.unsigned("afterSeq", default: 0), limit: Int(limit),
                              members: try f.bool("members", default: true))
        }
        let command: TeamCommand
        switch request.op {
        case "teamCreate":
            // Seed 001 names three team types; Parley builds NIM's advanced team and the supergroup (issue 38;
            // the discussion group is retired by NIM). Any other type is refused, not made as an advanced team.
            var info = TeamInfo(name: try f.string("name"))
            if let name = try f.optionalString("type") {
                guard let type = TeamType(name: name) else { throw .badValue("type", "\"advanced\" (the default) or \"superTeam\"") }
                info.type = type
            }
            try fill(&info, f)
            command = .create(info)
        case "teamInvite": command = .invite(targets: try accounts(f, "targets"), postscript: try f.string("postscript", default: ""), notifyExt: "")
        case "teamAcceptInvitation": command = .acceptInvitation
        case "teamRejectInvitation": command = .rejectInvitation
        case "teamApply": command = .apply(message: try f.string("message", default: ""))
        case "teamApproveApplication": command = .approveApplication(applicant: try ImOp.account(f, "applicant"), notifyExt: "")
        case "teamRejectApplication": command = .rejectApplication(applicant: try ImOp.account(f, "applicant"))
        case "teamKick": command = .kick(targets: try accounts(f, "targets"), notifyExt: "")
        case "teamLeave": command = .leave(notifyExt: "")
        case "teamUpdate": command = .update(try changes(f), notifyExt: "")
        case "teamDismiss": command = .dismiss(notifyExt: "")
        case "teamTransferOwner":
            command = .transferOwner(to: try ImOp.account(f, "to"), leave: try f.bool("leave", default: false), notifyExt: "")
        case "teamAddManagers": command = .addManagers(try accounts(f, "accounts"), notifyExt: "")
        case "teamRemoveManagers": command = .removeManagers(try accounts(f, "accounts"), notifyExt: "")
        case "teamMuteMember": command = .muteMember(try ImOp.account(f, "account"), muted: try f.bool("muted"), notifyExt: "")
        case "teamSetNotifyState": command = .setNotifyState(try pick(f, "state", notifyStates))
        case "sendTeamMessage":
            let typeName = try f.string("type", default: "text")
            guard let type = MessageType(protocolName: typeName), type != .notification else {
                throw .badValue("type", "clients cannot send \(typeName)")
            }
            command = .send(clientMessageId: try f.string("clientMessageId", default: ""), type: typeName, body: try f.string("body"),
                            ext: try f.string("ext", default: ""))
        default:
            throw .unknownOp(request.op)
        }
        return .team(teamId: teamId, command)
    }

    private static func accounts(_ f: RequestFields, _ name: String) throws(ProtocolError) -> [String] {
        let list = try f.strings(name)
        for id in list {
            guard (1...128).contains(id.utf8.count), AppScope.isLocal(id) else { throw .badValue(name, "ids of 1 … 128 bytes without U+001F") }
        }
        return list
    }

    private static func pick<T>(_ f: RequestFields, _ name: String, _ table: [String: T]) throws(ProtocolError) -> T {
        let value = try f.string(name)
        guard let v = table[value] else { throw .badValue(name, table.keys.sorted().joined(separator: ", ")) }
        return v
    }

    /// The optional info fields of a create.
    private static func fill(_ info: inout TeamInfo, _ f: RequestFields) throws(ProtocolError) {
        info.intro = try f.string("intro", default: "")
        info.announcement = try f.string("announcement", default: "")
        info.avatar = try f.string("avatar", default: "")
        if f.values["joinMode"] != nil { info.joinMode = try pick(f, "joinMode", joinModes) }
        if f.values["inviteMode"] != nil { info.inviteMode = try pick(f, "inviteMode", permissions) }
        if f.values["beInviteMode"] != nil { info.beInviteMode = try pick(f, "beInviteMode", beInviteModes) }
        if f.values["updateInfoMode"] != nil { info.updateInfoMode = try pick(f, "updateInfoMode", permissions) }
    }

    /// An update's changed fields as NIM's attachment has them (modes and mute-all as their numbers).
    private static func changes(_ f: RequestFields) throws(ProtocolError) -> [TeamUpdateTag: String] {
        var c: [TeamUpdateTag: String] = [:]
        for (name, tag) in [("name", TeamUpdateTag.name), ("intro", .intro), ("announcement", .announcement), ("avatar", .avatar)] {
            if let v = try f.optionalString(name) { c[tag] = v }
        }
        if f.values["joinMode"] != nil { c[.joinMode] = "\(try pick(f, "joinMode", joinModes).rawValue)" }
        if f.values["inviteMode"] != nil { c[.inviteMode] = "\(try pick(f, "inviteMode", permissions).rawValue)" }
        if f.values["beInviteMode"] != nil { c[.beInviteMode] = "\(try pick(f, "beInviteMode", beInviteModes).rawValue)" }
        if f.values["updateInfoMode"] != nil { c[.updateInfoMode] = "\(try pick(f, "updateInfoMode", permissions).rawValue)" }
        if f.values["muteAll"] != nil { c[.muteMode] = try f.bool("muteAll") ? "1" : "0" }
        guard !c.isEmpty else { throw .missingField("name, intro, announcement, avatar, a mode or muteAll") }
        return c
    }
}

extension TeamCommand {
    /// The command with its accounts in the app's namespace.
    func scoped(in namespace: String) -> TeamCommand {
        func s(_ id: String) -> String { AppScope.scoped(id, in: namespace) }
        switch self {
        case .invite(let targets, let p, let x): return .invite(targets: targets.map(s), postscript: p, notifyExt: x)
        case .approveApplication(let a, let x): return .approveApplication(applicant: s(a), notifyExt: x)
        case .rejectApplication(let a): return .rejectApplication(applicant: s(a))
        case .kick(let targets, let x): return .kick(targets: targets.map(s), notifyExt: x)
        case .transferOwner(let to, let leave, let x): return .transferOwner(to: s(to), leave: leave, notifyExt: x)
        case .addManagers(let list, let x): return .addManagers(list.map(s), notifyExt: x)
        case .removeManagers(let list, let x): return .removeManagers(list.map(s), notifyExt: x)
        case .muteMember(let a, let muted, let x): return .muteMember(s(a), muted: muted, notifyExt: x)
        case .create, .acceptInvitation, .rejectInvitation, .apply, .leave, .update, .dismiss, .setNotifyState, .send: return self
        }
    }
}
