import ParleyIM
import ParleyRooms

/// Issue 19: the app server's side of users' relationships and one-to-one messages (seed 004, docs/im.md,
/// docs/api.md "IM"), in NIM's shapes: `/v1/friend/*`, `/v1/user/setSpecialRelation`, `/v1/msg/*`. Accounts
/// are the app's (`/v1/user/create`) and live in the app's namespace, like its rooms (A8).
enum ImEndpoints {
    struct FriendAdd: Decodable, Sendable {
        var accid: String
        var faccid: String
        /// NIM's type: 1 add without verification, 2 request, 3 accept (verify) a request, 4 reject it.
        var type: Int
        var msg: String?
    }

    struct FriendDelete: Decodable, Sendable {
        var accid: String
        var faccid: String
        var isDeleteAlias: Bool?
    }

    struct FriendUpdate: Decodable, Sendable {
        var accid: String
        var faccid: String
        var alias: String
    }

    struct Account: Decodable, Sendable { var accid: String }

    struct SpecialRelation: Decodable, Sendable {
        var accid: String
        var targetAcc: String
        /// 1 blocklist (NIM's blacklist), 2 do-not-disturb (NIM's mute list).
        var relationType: Int
        /// 1 add, 0 remove.
        var value: Int
    }

    struct SendMsg: Decodable, Sendable {
        var from: String
        var to: String
        /// text, image, audio, video, location, file, tip or custom (never notification).
        var type: String?
        var body: String
        var ext: String?
        /// The sender's id for the message: a resend with the same one is answered with the first's seq.
        var msgId: String?
    }

    struct Sync: Decodable, Sendable {
        var accid: String
        /// The last sequence the caller has (0 = from the beginning of what is kept).
        var afterSeq: UInt64?
        var limit: Int
    }

    struct FriendJSON: Encodable, Sendable { var faccid: String; var alias: String; var createdAt: Int64 }
    struct RequestJSON: Encodable, Sendable { var accid: String; var msg: String; var time: Int64 }
    struct Relations: Encodable, Sendable {
        var friends: [FriendJSON]
        var incoming: [RequestJSON]
        var outgoing: [RequestJSON]
        var blacklist: [String]
        var mutelist: [String]
        var teams: [String]
    }

    struct SentAnswer: Encodable, Sendable { var seq: UInt64; var time: Int64 }
    struct SyncAnswer: Encodable, Sendable { var items: [ImItemJSON]; var nextSeq: UInt64; var firstSeq: UInt64 }

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/friend/add", FriendAdd.self) { api, b, app in
            guard let op = FriendOperation(rawValue: UInt8(clamping: max(0, b.type))), b.type <= 4 else {
                throw APIError(.badField, "type must be 1 (add), 2 (request), 3 (verify) or 4 (reject)")
            }
            let (me, other) = try await api.accounts(app, b.accid, b.faccid)
            _ = try await api.im(.user(.friend(op, target: other, message: b.msg ?? "")), for: me)
            return Done()
        },
        .post("/v1/friend/delete", FriendDelete.self) { api, b, app in
            let (me, other) = try await api.accounts(app, b.accid, b.faccid)
            _ = try await api.im(.user(.deleteFriend(target: other, removeRemark: b.isDeleteAlias ?? false)), for: me)
            return Done()
        },
        .post("/v1/friend/update", FriendUpdate.self) { api, b, app in
            let (me, other) = try await api.accounts(app, b.accid, b.faccid)
            _ = try await api.im(.user(.updateRemark(target: other, remark: b.alias)), for: me)
            return Done()
        },
        .post("/v1/friend/get", Account.self) { api, b, app in
            let (me, _) = try await api.accounts(app, b.accid)
            guard case .read(.relations(let r)) = try await api.im(.read(.relations), for: me) else {
                throw APIError(.unavailable, "unexpected reply to a read")
            }
            func requests(_ list: [ImRelations.Request]) -> [RequestJSON] {
                list.map { RequestJSON(accid: AppScope.local($0.account), msg: $0.message, time: $0.at) }
            }
            return Relations(friends: r.friends.map { FriendJSON(faccid: AppScope.local($0.account), alias: $0.remark, createdAt: $0.since) },
                             incoming: requests(r.incoming), outgoing: requests(r.outgoing),
                             blacklist: r.blocked.map(AppScope.local), mutelist: r.muted.map(AppScope.local),
                             teams: r.teams.map(AppScope.local))
        },
        .post("/v1/user/setSpecialRelation", SpecialRelation.self) { api, b, app in
            guard [1, 2].contains(b.relationType), [0, 1].contains(b.value) else {
                throw APIError(.badField, "relationType must be 1 (blocklist) or 2 (do-not-disturb) and value 0 or 1")
            }
            let (me, other) = try await api.accounts(app, b.accid, b.targetAcc)
            let on = b.value == 1
            _ = try await api.im(.user(b.relationType == 1 ? .setBlocked(target: other, on) : .setMuted(target: other, on)), for: me)
            return Done()
        },
        // Applied on the receiver's shard (where its blocklist is); the sender's copy follows by an effect.
        .post("/v1/msg/sendMsg", SendMsg.self) { api, b, app in
            let type = b.type ?? "text"
            _ = try FieldRule.pick(type, FieldRule.messageTypes, "type")
            let (me, other) = try await api.accounts(app, b.from, b.to)
            let send = P2PSend(to: other, clientMessageId: b.msgId ?? "", type: type, body: b.body, ext: b.ext ?? "")
            guard case .sent(let s) = try await api.im(.send(send), for: me, shard: api.backend.shard(ofUser: other)) else {
                throw APIError(.unavailable, "unexpected reply to a send")
            }
            return SentAnswer(seq: s.seq, time: s.time)
        },
        .post("/v1/msg/sync", Sync.self) { api, b, app in
            let (me, _) = try await api.accounts(app, b.accid)
            guard case .read(.log(let items, let next, let first)) = try await api.im(.read(.log(after: b.afterSeq ?? 0, limit: b.limit)), for: me) else {
                throw APIError(.unavailable, "unexpected reply to a read")
            }
            return SyncAnswer(items: items.map(ImItemJSON.init), nextSeq: next, firstSeq: first)
        },
    ]
}

extension ServerAPI {
    /// The app's accounts, in its namespace: each must exist (`/v1/user/create`).
    func accounts(_ app: String, _ first: String, _ second: String? = nil) async throws -> (String, String) {
        let scoped = try await scopedAccounts(app, [first] + (second.map { [$0] } ?? []))
        return (scoped[0], scoped.count > 1 ? scoped[1] : "")
    }

    /// Accounts that must exist (one read of the meta state for all), in the app's namespace.
    func scopedAccounts(_ app: String, _ ids: [String]) async throws -> [String] {
        let meta = try await backend.metaState()
        for id in ids {
            try FieldRule.id(id, "account")
            guard AppScope.isLocal(id) else { throw APIError(.badField, "accounts must not contain U+001F") }
            guard meta.user(appKey: app, account: id) != nil else { throw APIError(.accountNotFound, "no account \(id)") }
        }
        let ns = namespace(app)
        return ids.map { AppScope.scoped($0, in: ns) }
    }

    /// Runs an IM command for `account` on its shard (or `shard`), with the request's key for that shard
    /// (SPEC A7); a refusal becomes its `APIError`.
    func im(_ command: ImShardCommand, for account: String, shard: Int? = nil) async throws -> ImApplied {
        guard await backend.everyNodeHas(.im) else {
            throw APIError(.unavailable, "IM waits until every node reads IM commands (peer protocol 3): finish the upgrade")
        }
        let shard = shard ?? backend.shard(ofUser: account)
        switch try await backend.submitIm(command, account: account, shard: shard,
                                          requestKey: SignedRequest.current?.key(for: "s\(shard)")) {
        case .success(let applied): return applied
        case .failure(var error):
            error.message = AppScope.localIds(in: error.message, namespace: AppScope.namespace(of: account))
            throw APIError(error)
        }
    }
}

/// One item of a user's conversation log as the API answers it: a one-to-one message (either way) or a
/// system notification (FriendAdd; a team notice), accounts in the app's own ids.
struct ImItemJSON: Encodable, Sendable {
    var seq: UInt64
    var time: Int64
    /// "message", "friendAdd" or "teamNotice".
    var kind: String
    var from: String?
    var to: String?
    var msgId: String?
    var type: String?
    var body: String?
    var ext: String?
    var receiverSeq: UInt64?
    var alert: Bool?
    var source: String?
    var target: String?
    /// FriendAdd: 1 add, 2 request, 3 verify, 4 reject. Team notice: NIM's system notification type.
    var operation: Int?
    var msg: String?
    var teamId: String?

    init(_ item: ImLogItem) {
        seq = item.seq
        time = item.time
        switch item.kind {
        case .message(let m, let alert):
            kind = "message"
            from = AppScope.local(m.from); to = AppScope.local(m.to); msgId = m.clientMessageId
            type = m.type; body = m.body; ext = m.ext; receiverSeq = m.receiverSeq; self.alert = alert
        case .friendNotification(let source, let target, let operation, let message):
            kind = "friendAdd"
            self.source = AppScope.local(source); self.target = AppScope.local(target)
            self.operation = Int(operation.rawValue); msg = message
        case .teamNotice(let notice, let teamId, let source, let message):
            kind = "teamNotice"
            self.source = AppScope.local(source); self.teamId = AppScope.local(teamId)
            operation = Int(notice.rawValue); msg = message
        }
    }
}
