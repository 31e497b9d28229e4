import Foundation

/// The seed's calls (004's NIMUserManager, the chat and team managers of 001), one per protocol op
/// (docs/sdk.md has the table). Each needs the login's connection up.
extension IMClient {
    private struct Relations: Decodable { var relations: IMRelations }
    private struct Sent: Decodable { var seq: Int64; var time: Int64? }
    private struct Team: Decodable { var team: TeamSnapshot }
    private struct Receipts: Decodable { var receipts: [TeamReceipt] }

    // MARK: Friends (004)

    /// requestFriend: add without verification, request, verify (accept) or reject `target`'s request.
    public func requestFriend(_ target: String, operation: FriendOperation, message: String? = nil) async throws {
        _ = try await call("friend", ["target": .string(target), "operation": .string(operation.rawValue),
                                      "message": message.map(JSONValue.string) ?? .null])
    }

    /// deleteFriend:removeAlias:.
    public func deleteFriend(_ target: String, removeAlias: Bool = false) async throws {
        _ = try await call("deleteFriend", ["target": .string(target), "removeRemark": .bool(removeAlias)])
    }

    /// The user's remark (alias) for a friend.
    public func updateRemark(_ remark: String, forFriend target: String) async throws {
        _ = try await call("updateRemark", ["target": .string(target), "remark": .string(remark)])
    }

    public func relations() async throws -> IMRelations {
        try await call("relations", answer: Relations.self).relations
    }

    public func myFriends() async throws -> [IMFriend] { try await relations().friends }

    public func isMyFriend(_ account: String) async throws -> Bool {
        try await relations().friends.contains { $0.account == account }
    }

    // MARK: Blocklist and do-not-disturb (004)

    public func addToBlackList(_ account: String) async throws {
        _ = try await call("setBlocked", ["target": .string(account), "blocked": true])
    }

    /// The seed's spelling.
    public func removeFromBlackBlackList(_ account: String) async throws {
        _ = try await call("setBlocked", ["target": .string(account), "blocked": false])
    }

    public func myBlackList() async throws -> [String] { try await relations().blocked }

    public func isUserInBlackList(_ account: String) async throws -> Bool { try await relations().blocked.contains(account) }

    /// updateNotifyState:forUser: — `notify` false puts the user on the do-not-disturb list.
    public func updateNotifyState(_ notify: Bool, forUser account: String) async throws {
        _ = try await call("setMuted", ["target": .string(account), "muted": .bool(!notify)])
    }

    /// notifyForNewMsg: whether the user's messages alert.
    public func notifyForNewMsg(_ account: String) async throws -> Bool { try await !relations().muted.contains(account) }

    // MARK: Messages

    /// Sends to a user (applied where the receiver is; 14201 when it blocked this user) or a team. A resend
    /// with the same `clientMessageId` is answered with the first send's `seq`.
    @discardableResult
    public func sendMessage(to session: IMSession, type: String = "text", body: String, ext: String? = nil,
                            clientMessageId: String? = nil) async throws -> Int64 {
        var fields: [String: JSONValue] = ["type": .string(type), "body": .string(body)]
        if let ext { fields["ext"] = .string(ext) }
        if let clientMessageId { fields["clientMessageId"] = .string(clientMessageId) }
        switch session {
        case .p2p(let to):
            fields["to"] = .string(to)
            return try await call("sendP2P", fields, answer: Sent.self).seq
        case .team(let teamId):
            fields["teamId"] = .string(teamId)
            return try await call("sendTeamMessage", fields, answer: Sent.self).seq
        }
    }

    // MARK: Read receipts (issue 38)

    /// NIM's sendMessageReceipt: this user read its conversation with `peer` through `throughSeq` (its own
    /// log's sequence — a received message's `seq`). The peer's devices hear `.p2pRead`.
    public func markRead(peer: String, throughSeq: Int64) async throws {
        _ = try await call("markRead", ["peer": .string(peer), "throughSeq": .int(throughSeq)])
    }

    /// Seed 001's sendTeamMessageReceipts: this member read the team's messages through `throughSeq`.
    public func markRead(team teamId: String, throughSeq: Int64) async throws {
        _ = try await call("markRead", ["teamId": .string(teamId), "throughSeq": .int(throughSeq)])
    }

    /// Seed 001's refreshTeamMessageReceipts: who read the team's messages at `seqs` (1 … 100).
    public func teamReceipts(_ teamId: String, seqs: [Int64]) async throws -> [TeamReceipt] {
        try await call("teamReceipts", ["teamId": .string(teamId), "seqs": .array(seqs.map(JSONValue.int))],
                       answer: Receipts.self).receipts
    }

    /// The user's conversations — one-to-one and teams, each newest first — with unread counts and read
    /// positions (recent sessions, at login or whenever the app shows its list).
    public func conversations() async throws -> IMConversationList {
        try await call("conversations", answer: IMConversationList.self)
    }

    // MARK: Teams (001)

    public func createTeam(_ teamId: String, name: String, options: TeamOptions = TeamOptions()) async throws {
        var fields: [String: JSONValue] = ["teamId": .string(teamId), "name": .string(name)]
        for (key, value) in [("intro", options.intro), ("announcement", options.announcement), ("avatar", options.avatar),
                             ("joinMode", options.joinMode), ("inviteMode", options.inviteMode),
                             ("beInviteMode", options.beInviteMode), ("updateInfoMode", options.updateInfoMode),
                             ("type", options.type)] {
            if let value { fields[key] = .string(value) }
        }
        _ = try await call("teamCreate", fields)
    }

    /// addUsers:toTeam:postscript: — joined at once or invited, as the team's be-invite mode says.
    public func addUsers(_ accounts: [String], toTeam teamId: String, postscript: String? = nil) async throws {
        _ = try await team("teamInvite", teamId, ["targets": .array(accounts.map(JSONValue.string)),
                                                  "postscript": postscript.map(JSONValue.string) ?? .null])
    }

    public func acceptInvite(_ teamId: String) async throws { _ = try await team("teamAcceptInvitation", teamId) }
    public func rejectInvite(_ teamId: String) async throws { _ = try await team("teamRejectInvitation", teamId) }

    public func applyToTeam(_ teamId: String, message: String? = nil) async throws {
        _ = try await team("teamApply", teamId, ["message": message.map(JSONValue.string) ?? .null])
    }

    public func passApply(_ teamId: String, applicant: String) async throws {
        _ = try await team("teamApproveApplication", teamId, ["applicant": .string(applicant)])
    }

    public func rejectApply(_ teamId: String, applicant: String) async throws {
        _ = try await team("teamRejectApplication", teamId, ["applicant": .string(applicant)])
    }

    public func kickUsers(_ accounts: [String], fromTeam teamId: String) async throws {
        _ = try await team("teamKick", teamId, ["targets": .array(accounts.map(JSONValue.string))])
    }

    public func quitTeam(_ teamId: String) async throws { _ = try await team("teamLeave", teamId) }

    public func dismissTeam(_ teamId: String) async throws { _ = try await team("teamDismiss", teamId) }

    public func updateTeam(_ teamId: String, _ update: TeamUpdate) async throws {
        var fields: [String: JSONValue] = [:]
        for (key, value) in [("name", update.name), ("intro", update.intro), ("announcement", update.announcement),
                             ("avatar", update.avatar), ("joinMode", update.joinMode), ("inviteMode", update.inviteMode),
                             ("beInviteMode", update.beInviteMode), ("updateInfoMode", update.updateInfoMode)] {
            if let value { fields[key] = .string(value) }
        }
        if let mute = update.muteAll { fields["muteAll"] = .bool(mute) }
        _ = try await team("teamUpdate", teamId, fields)
    }

    /// transferManager:newOwner:isLeave:.
    public func transferOwner(_ teamId: String, to account: String, leave: Bool = false) async throws {
        _ = try await team("teamTransferOwner", teamId, ["to": .string(account), "leave": .bool(leave)])
    }

    public func addManagers(toTeam teamId: String, users: [String]) async throws {
        _ = try await team("teamAddManagers", teamId, ["accounts": .array(users.map(JSONValue.string))])
    }

    public func removeManagers(fromTeam teamId: String, users: [String]) async throws {
        _ = try await team("teamRemoveManagers", teamId, ["accounts": .array(users.map(JSONValue.string))])
    }

    /// updateMuteState:userId:inTeam:.
    public func updateMuteState(_ muted: Bool, userId: String, inTeam teamId: String) async throws {
        _ = try await team("teamMuteMember", teamId, ["account": .string(userId), "muted": .bool(muted)])
    }

    /// updateNotifyState:inTeam: — team do-not-disturb: only the alert flag of this member's team items changes.
    public func updateNotifyState(_ state: TeamNotifyState, inTeam teamId: String) async throws {
        _ = try await team("teamSetNotifyState", teamId, ["state": .string(state.rawValue)])
    }

    /// notifyStateForNewMsg: this user's notify state in the team.
    public func notifyStateForNewMsg(_ teamId: String) async throws -> TeamNotifyState {
        let account = try currentAccount()
        guard let me = try await fetchTeam(teamId, afterSeq: Int64.max - 1, limit: 1).members.first(where: { $0.account == account }) else {
            throw ChatroomError(code: 14214, message: "not a member of \(teamId)")
        }
        return me.notifyState
    }

    /// A team's info, members and its log after `afterSeq` (at most `limit` items, 1 … 500).
    /// `members` false: the info and items without the member list (empty; a supergroup's is thousands long).
    public func fetchTeam(_ teamId: String, afterSeq: Int64 = 0, limit: Int = 100, members: Bool = true) async throws -> TeamSnapshot {
        var fields: [String: JSONValue] = ["teamId": .string(teamId), "afterSeq": .int(afterSeq), "limit": .int(Int64(limit))]
        if !members { fields["members"] = .bool(false) }
        return try await call("teamQuery", fields, answer: Team.self).team
    }

    private func team(_ op: String, _ teamId: String, _ fields: [String: JSONValue] = [:]) async throws -> Data {
        var all = fields
        all["teamId"] = .string(teamId)
        return try await call(op, all)
    }
}
