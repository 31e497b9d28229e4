import ParleyIM
import ParleyRooms

/// Issue 19: the app server's side of teams (seed 001, docs/im.md "Teams", docs/api.md "Teams"), in NIM's
/// shapes: `/v1/team/*`. `owner` names the operator where NIM's API does (it must hold the role the command
/// needs); `attach` is the notification's notifyExt, settable only here. Team ids and accounts are the app's
/// own, in its namespace (A8).
enum TeamEndpoints {
    struct Create: Decodable, Sendable {
        var tid: String
        var owner: String
        var tname: String
        var members: [String]?
        var intro: String?
        var announcement: String?
        var icon: String?
        /// 0 anyone joins, 1 needs approval, 2 nobody may apply.
        var joinmode: Int?
        /// 0 the invitee must accept, 1 joins at once.
        var beinvitemode: Int?
        /// 0 managers invite, 1 any member.
        var invitemode: Int?
        /// 0 managers edit the info, 1 any member.
        var uptinfomode: Int?
        var msg: String?
        /// "advanced" (the default) or "superTeam" (issue 38: a supergroup of up to 10,000 members).
        var type: String?
    }

    struct Members: Decodable, Sendable {
        var tid: String
        var owner: String
        var members: [String]
        var msg: String?
        var attach: String?
    }

    struct Operator: Decodable, Sendable {
        var tid: String
        var owner: String
        var attach: String?
    }

    struct Member: Decodable, Sendable {
        var tid: String
        var accid: String
        var msg: String?
        var attach: String?
    }

    struct Decide: Decodable, Sendable {
        var tid: String
        var owner: String
        var applicant: String
        var attach: String?
    }

    struct Update: Decodable, Sendable {
        var tid: String
        var owner: String
        var tname: String?
        var intro: String?
        var announcement: String?
        var icon: String?
        var joinmode: Int?
        var beinvitemode: Int?
        var invitemode: Int?
        var uptinfomode: Int?
        /// Mute everyone but the owner and managers (NIM's muteTlistAll).
        var muteAll: Bool?
        var attach: String?
    }

    struct ChangeOwner: Decodable, Sendable {
        var tid: String
        var owner: String
        var newowner: String
        /// 1: the old owner leaves the team; 2: it stays as a normal member.
        var leave: Int
        var attach: String?
    }

    struct MuteMember: Decodable, Sendable {
        var tid: String
        var owner: String
        var accid: String
        /// 1 mute, 0 unmute.
        var mute: Int
        var attach: String?
    }

    struct NotifyState: Decodable, Sendable {
        var tid: String
        var accid: String
        /// 0 every message alerts, 1 none, 2 only the owner's and managers'.
        var ope: Int
    }

    struct Query: Decodable, Sendable {
        var tid: String
        var afterSeq: UInt64?
        var limit: Int
        /// false: the items without the member list (a supergroup's is thousands long); `members` is then [].
        var members: Bool?
    }

    struct SendMsg: Decodable, Sendable {
        var tid: String
        var from: String
        var type: String?
        var body: String
        var ext: String?
        var msgId: String?
    }

    struct CreateAnswer: Encodable, Sendable { var tid: String }
    struct SentAnswer: Encodable, Sendable { var seq: UInt64 }

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/team/create", Create.self) { api, b, app in
            var info = TeamInfo(name: b.tname)
            if let name = b.type {
                guard let type = TeamType(name: name) else { throw APIError(.badField, "type is \"advanced\" or \"superTeam\"") }
                info.type = type
            }
            // A supergroup is written only once every node reads it (peer protocol 14, a rolling upgrade).
            if info.type == .superTeam, !(await api.backend.everyNodeHas(.superTeams)) {
                throw APIError(.unavailable, "supergroups wait until every node reads them (peer protocol 14): finish the upgrade")
            }
            info.intro = b.intro ?? ""; info.announcement = b.announcement ?? ""; info.avatar = b.icon ?? ""
            if let v = b.joinmode { info.joinMode = try mode(v, "joinmode") }
            if let v = b.beinvitemode { info.beInviteMode = try mode(v, "beinvitemode") }
            if let v = b.invitemode { info.inviteMode = try mode(v, "invitemode") }
            if let v = b.uptinfomode { info.updateInfoMode = try mode(v, "uptinfomode") }
            let (owner, _) = try await api.accounts(app, b.owner)
            let members = try await api.scopedAccounts(app, b.members ?? [])
            let tid = try api.scopedTeam(app, b.tid)
            _ = try await api.team(.create(info), tid, by: owner)
            if !members.isEmpty {
                _ = try await api.team(.invite(targets: members, postscript: b.msg ?? "", notifyExt: ""), tid, by: owner)
            }
            return CreateAnswer(tid: b.tid)
        },
        .post("/v1/team/add", Members.self) { api, b, app in
            try await api.team(.invite(targets: try await api.scopedAccounts(app, b.members), postscript: b.msg ?? "", notifyExt: b.attach ?? ""),
                               tid: b.tid, by: b.owner, app: app)
        },
        .post("/v1/team/kick", Members.self) { api, b, app in
            try await api.team(.kick(targets: try await api.scopedAccounts(app, b.members), notifyExt: b.attach ?? ""), tid: b.tid, by: b.owner, app: app)
        },
        .post("/v1/team/leave", Member.self) { api, b, app in
            try await api.team(.leave(notifyExt: b.attach ?? ""), tid: b.tid, by: b.accid, app: app)
        },
        .post("/v1/team/acceptInvite", Member.self) { api, b, app in
            try await api.team(.acceptInvitation, tid: b.tid, by: b.accid, app: app)
        },
        .post("/v1/team/rejectInvite", Member.self) { api, b, app in
            try await api.team(.rejectInvitation, tid: b.tid, by: b.accid, app: app)
        },
        .post("/v1/team/apply", Member.self) { api, b, app in
            try await api.team(.apply(message: b.msg ?? ""), tid: b.tid, by: b.accid, app: app)
        },
        .post("/v1/team/passApply", Decide.self) { api, b, app in
            let (op, applicant) = try await api.accounts(app, b.owner, b.applicant)
            _ = try await api.team(.approveApplication(applicant: applicant, notifyExt: b.attach ?? ""), try api.scopedTeam(app, b.tid), by: op)
            return Done()
        },
        .post("/v1/team/rejectApply", Decide.self) { api, b, app in
            let (op, applicant) = try await api.accounts(app, b.owner, b.applicant)
            _ = try await api.team(.rejectApplication(applicant: applicant), try api.scopedTeam(app, b.tid), by: op)
            return Done()
        },
        .post("/v1/team/update", Update.self) { api, b, app in
            var changes: [TeamUpdateTag: String] = [:]
            for (tag, value) in [(TeamUpdateTag.name, b.tname), (.intro, b.intro), (.announcement, b.announcement), (.avatar, b.icon)] {
                if let value { changes[tag] = value }
            }
            for (tag, value, name) in [(TeamUpdateTag.joinMode, b.joinmode, "joinmode"), (.beInviteMode, b.beinvitemode, "beinvitemode"),
                                       (.inviteMode, b.invitemode, "invitemode"), (.updateInfoMode, b.uptinfomode, "uptinfomode")] {
                if let value {
                    guard (0...(tag == .joinMode ? 2 : 1)).contains(value) else { throw APIError(.badField, "\(name) out of range") }
                    changes[tag] = "\(value)"
                }
            }
            if let mute = b.muteAll { changes[.muteMode] = mute ? "1" : "0" }
            guard !changes.isEmpty else { throw APIError(.badField, "nothing to update") }
            return try await api.team(.update(changes, notifyExt: b.attach ?? ""), tid: b.tid, by: b.owner, app: app)
        },
        .post("/v1/team/remove", Operator.self) { api, b, app in
            try await api.team(.dismiss(notifyExt: b.attach ?? ""), tid: b.tid, by: b.owner, app: app)
        },
        .post("/v1/team/changeOwner", ChangeOwner.self) { api, b, app in
            guard b.leave == 1 || b.leave == 2 else { throw APIError(.badField, "leave must be 1 (leave) or 2 (stay)") }
            let (op, to) = try await api.accounts(app, b.owner, b.newowner)
            _ = try await api.team(.transferOwner(to: to, leave: b.leave == 1, notifyExt: b.attach ?? ""), try api.scopedTeam(app, b.tid), by: op)
            return Done()
        },
        .post("/v1/team/addManager", Members.self) { api, b, app in
            try await api.team(.addManagers(try await api.scopedAccounts(app, b.members), notifyExt: b.attach ?? ""), tid: b.tid, by: b.owner, app: app)
        },
        .post("/v1/team/removeManager", Members.self) { api, b, app in
            try await api.team(.removeManagers(try await api.scopedAccounts(app, b.members), notifyExt: b.attach ?? ""), tid: b.tid, by: b.owner, app: app)
        },
        .post("/v1/team/muteTlist", MuteMember.self) { api, b, app in
            guard b.mute == 0 || b.mute == 1 else { throw APIError(.badField, "mute must be 0 or 1") }
            let (op, target) = try await api.accounts(app, b.owner, b.accid)
            _ = try await api.team(.muteMember(target, muted: b.mute == 1, notifyExt: b.attach ?? ""), try api.scopedTeam(app, b.tid), by: op)
            return Done()
        },
        .post("/v1/team/setNotifyState", NotifyState.self) { api, b, app in
            guard let state = TeamNotifyState(rawValue: UInt8(clamping: max(0, b.ope))), b.ope <= 2 else {
                throw APIError(.badField, "ope must be 0 (all), 1 (none) or 2 (only managers)")
            }
            return try await api.team(.setNotifyState(state), tid: b.tid, by: b.accid, app: app)
        },
        .post("/v1/team/sendMsg", SendMsg.self) { api, b, app in
            let type = b.type ?? "text"
            _ = try FieldRule.pick(type, FieldRule.messageTypes, "type")
            let (me, _) = try await api.accounts(app, b.from)
            let outcome = try await api.team(.send(clientMessageId: b.msgId ?? "", type: type, body: b.body, ext: b.ext ?? ""),
                                             try api.scopedTeam(app, b.tid), by: me)
            guard case .team(let o) = outcome, let seq = o.messageSeq else { throw APIError(.unavailable, "unexpected reply to a send") }
            return SentAnswer(seq: seq)
        },
        .post("/v1/team/query", Query.self) { api, b, app in
            let tid = try api.scopedTeam(app, b.tid)
            let after = b.afterSeq ?? 0, withMembers = b.members ?? true
            // Without the members the leader leaves them out (peer protocol 14's read); beside an older node
            // they come and are dropped here.
            let leftOut = withMembers ? false : await api.backend.everyNodeHas(.superTeams)
            let read: ImRead = leftOut ? .teamLog(teamId: tid, after: after, limit: b.limit) : .team(teamId: tid, after: after, limit: b.limit)
            guard case .read(.team(var view)) = try await api.team(read: read, tid) else {
                throw APIError(.unavailable, "unexpected reply to a read")
            }
            if !withMembers { view.members = [] }
            return TeamJSON(view)
        },
    ]

    static func mode<T: RawRepresentable>(_ value: Int, _ name: String) throws -> T where T.RawValue == UInt8 {
        guard value >= 0, value <= 255, let m = T(rawValue: UInt8(value)) else { throw APIError(.badField, "\(name) out of range") }
        return m
    }
}

extension ServerAPI {
    /// A team id in the app's namespace (1 … 128 bytes, no U+001F).
    func scopedTeam(_ app: String, _ tid: String) throws -> String {
        try FieldRule.id(tid, "tid")
        guard AppScope.isLocal(tid) else { throw APIError(.badField, "tid must not contain U+001F") }
        return AppScope.scoped(tid, in: namespace(app))
    }

    /// A team command by the app's account `accid` on team `tid` (both as the app knows them): `{}` when it applied.
    func team(_ command: TeamCommand, tid: String, by accid: String, app: String) async throws -> Done {
        let (account, _) = try await accounts(app, accid)
        _ = try await team(command, try scopedTeam(app, tid), by: account)
        return Done()
    }

    /// A team command by `account` (app-scoped) on the team's shard.
    func team(_ command: TeamCommand, _ tid: String, by account: String) async throws -> ImApplied {
        try await im(.team(teamId: tid, command), for: account, shard: backend.shard(ofTeam: tid))
    }

    /// A team read as the app server.
    func team(read: ImRead, _ tid: String) async throws -> ImApplied {
        try await im(.read(read), for: AppScope.scoped("$app", in: AppScope.namespace(of: tid)), shard: backend.shard(ofTeam: tid))
    }
}

/// A team as `/v1/team/query` answers it.
struct TeamJSON: Encodable, Sendable {
    struct Member: Encodable, Sendable {
        var accid: String
        /// 0 normal, 1 manager, 2 owner (NIMTeamMemberType).
        var type: Int
        var mute: Bool
        /// 0 all, 1 none, 2 only managers.
        var notifyState: Int
        var joinTime: Int64
    }

    struct Item: Encodable, Sendable {
        var seq: UInt64
        var time: Int64
        /// "message" or "notification".
        var kind: String
        var from: String?
        var msgId: String?
        var type: String?
        var body: String?
        var ext: String?
        /// NIMTeamOperationType.
        var operation: Int?
        var source: String?
        var targets: [String]?
        var notifyExt: String?
        /// NIMTeamUpdateTag → value.
        var attachment: [String: String]?
    }

    var tid: String
    /// "advanced" or "superTeam".
    var type: String
    var tname: String
    var intro: String
    var announcement: String
    var icon: String
    var joinmode: Int
    var beinvitemode: Int
    var invitemode: Int
    var uptinfomode: Int
    var muteAll: Bool
    var owner: String
    var members: [Member]
    var items: [Item]
    var nextSeq: UInt64

    init(_ v: TeamView) {
        tid = AppScope.local(v.teamId)
        type = v.info.type.name
        tname = v.info.name; intro = v.info.intro; announcement = v.info.announcement; icon = v.info.avatar
        joinmode = Int(v.info.joinMode.rawValue); beinvitemode = Int(v.info.beInviteMode.rawValue)
        invitemode = Int(v.info.inviteMode.rawValue); uptinfomode = Int(v.info.updateInfoMode.rawValue)
        muteAll = v.info.muteAll
        owner = AppScope.local(v.owner)
        members = v.members.map {
            Member(accid: AppScope.local($0.account), type: Int($0.member.role.rawValue), mute: $0.member.muted,
                   notifyState: Int($0.member.notify.rawValue), joinTime: $0.member.joinedAt)
        }
        items = v.items.map(Item.init)
        nextSeq = v.nextSeq
    }
}

extension TeamJSON.Item {
    /// A team log item with the app's own ids.
    init(_ i: TeamLogItem) {
        switch i.kind {
        case .message(let m):
            self.init(seq: i.seq, time: i.time, kind: "message", from: AppScope.local(m.from), msgId: m.clientMessageId,
                      type: m.type, body: m.body, ext: m.ext)
        case .notification(let n):
            var attachment: [String: String] = [:]
            for (tag, value) in n.attachment { attachment["\(tag.rawValue)"] = value }
            self.init(seq: i.seq, time: i.time, kind: "notification", operation: Int(n.operation.rawValue),
                      source: AppScope.local(n.source), targets: n.targets.map(AppScope.local), notifyExt: n.notifyExt,
                      attachment: attachment)
        }
    }
}
