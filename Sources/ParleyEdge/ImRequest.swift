import ParleyIM
import ParleyRooms

/// Issue 19: the IM ops of the client protocol (docs/protocol.md, "IM"): a login, then the user's own
/// relationship commands, one-to-one sends and reads. Ids are the app's own here; the edge puts them in the
/// login's app namespace (A8) before anything reaches the cluster.
public enum ImOp: Sendable {
    case login(appKey: String, account: String, token: String)
    /// A relationship command for the logged-in user's shard (targets not yet scoped).
    case user(ImCommand)
    /// A one-to-one message; applied on the receiver's shard.
    case send(P2PSend)
    case relations
    case sync(after: UInt64, limit: Int)
    /// A team command for the team's shard (team id and accounts not yet scoped).
    case team(teamId: String, TeamCommand)
    /// `members` false: without the member list (issue 38: a supergroup's is thousands long).
    case teamQuery(teamId: String, after: UInt64, limit: Int, members: Bool)
    /// Issue 38: a read receipt (peer or team id not yet scoped), who read a team's messages, the user's
    /// one-to-one conversations with their unread counts.
    case markRead(ReadMark)
    case teamReceipts(teamId: String, seqs: [UInt64])
    case conversations

    static let names: Set<String> = Set(["imLogin", "friend", "deleteFriend", "updateRemark", "setBlocked", "setMuted",
                                         "relations", "sendP2P", "syncIm", "markRead", "teamReceipts", "conversations"])
        .union(TeamRequest.names)

    /// Ops that need every node to read receipts (peer protocol 11).
    var isReceipt: Bool {
        switch self {
        case .markRead, .teamReceipts, .conversations: true
        default: false
        }
    }

    /// The accounts (as the app knows them) the op names besides the logged-in user: each must exist.
    var namedAccounts: [String] {
        switch self {
        case .login, .relations, .sync, .teamQuery, .teamReceipts, .conversations, .markRead(.team): return []
        case .markRead(.p2p(let peer, _)): return [peer]
        case .user(let c):
            switch c {
            case .friend(_, let t, _), .deleteFriend(let t, _), .updateRemark(let t, _), .setBlocked(let t, _), .setMuted(let t, _):
                return [t]
            }
        case .send(let m): return [m.to]
        case .team(_, let c):
            switch c {
            case .invite(let targets, _, _), .kick(let targets, _): return targets
            case .approveApplication(let a, _), .rejectApplication(let a): return [a]
            case .transferOwner(let to, _, _): return [to]
            case .addManagers(let list, _), .removeManagers(let list, _): return list
            case .muteMember(let a, _, _): return [a]
            case .create, .acceptInvitation, .rejectInvitation, .apply, .leave, .update, .dismiss, .setNotifyState, .send: return []
            }
        }
    }

    static let friendOperations: [String: FriendOperation] = ["add": .add, "request": .request, "verify": .verify, "reject": .reject]

    init(_ request: ClientRequest) throws(ProtocolError) {
        let f = request.fields
        switch request.op {
        case "imLogin":
            let auth = try f.object("auth")
            guard try auth.string("mode") == "im" else { throw .badValue("auth.mode", "im") }
            self = .login(appKey: try auth.string("appKey"), account: try Self.account(auth, "account"),
                          token: try auth.string("token"))
        case "friend":
            let name = try f.string("operation")
            guard let op = Self.friendOperations[name] else { throw .badValue("operation", "add, request, verify or reject") }
            self = .user(.friend(op, target: try Self.account(f, "target"), message: try f.string("message", default: "")))
        case "deleteFriend":
            self = .user(.deleteFriend(target: try Self.account(f, "target"), removeRemark: try f.bool("removeRemark", default: false)))
        case "updateRemark":
            self = .user(.updateRemark(target: try Self.account(f, "target"), remark: try f.string("remark")))
        case "setBlocked":
            self = .user(.setBlocked(target: try Self.account(f, "target"), try f.bool("blocked")))
        case "setMuted":
            self = .user(.setMuted(target: try Self.account(f, "target"), try f.bool("muted")))
        case "relations":
            self = .relations
        case "sendP2P":
            let typeName = try f.string("type", default: "text")
            guard let type = MessageType(protocolName: typeName), type != .notification else {
                throw .badValue("type", "clients cannot send \(typeName)")
            }
            self = .send(P2PSend(to: try Self.account(f, "to"), clientMessageId: try f.string("clientMessageId", default: ""),
                                 type: typeName, body: try f.string("body"), ext: try f.string("ext", default: "")))
        case "syncIm":
            let limit = try f.int("limit")
            guard limit >= 1, limit <= 500 else { throw .badValue("limit", "1 … 500") }
            self = .sync(after: try f.unsigned("afterSeq", default: 0), limit: Int(limit))
        case "markRead":
            let through = try f.unsigned("throughSeq")
            switch (try f.optionalString("peer"), try f.optionalString("teamId")) {
            case (.some, nil): self = .markRead(.p2p(peer: try Self.account(f, "peer"), throughSeq: through))
            case (nil, .some): self = .markRead(.team(teamId: try Self.account(f, "teamId"), throughSeq: through))
            default: throw .badValue("peer", "one of peer (a one-to-one conversation) or teamId")
            }
        case "teamReceipts":
            let seqs = try f.unsignedArray("seqs")
            guard (1...ImShardState.maxReceiptSeqs).contains(seqs.count) else {
                throw .badValue("seqs", "1 … \(ImShardState.maxReceiptSeqs) sequences")
            }
            self = .teamReceipts(teamId: try Self.account(f, "teamId"), seqs: seqs)
        case "conversations":
            self = .conversations
        case let op where TeamRequest.names.contains(op):
            self = try TeamRequest.parse(request)
        default:
            throw .unknownOp(request.op)
        }
    }

    /// An account id as the app knows it: 1 … 128 bytes, never one that could name a namespace (A8).
    static func account(_ f: RequestFields, _ name: String) throws(ProtocolError) -> String {
        let id = try f.string(name)
        guard (1...128).contains(id.utf8.count) else { throw .badValue(name, "1 … 128 bytes") }
        guard AppScope.isLocal(id) else { throw .badValue(name, "must not contain U+001F") }
        return id
    }
}

extension ImCommand {
    /// The command with its target in the app's namespace.
    func scoped(in namespace: String) -> ImCommand {
        func s(_ id: String) -> String { AppScope.scoped(id, in: namespace) }
        switch self {
        case .friend(let op, let target, let message): return .friend(op, target: s(target), message: message)
        case .deleteFriend(let target, let remove): return .deleteFriend(target: s(target), removeRemark: remove)
        case .updateRemark(let target, let remark): return .updateRemark(target: s(target), remark: remark)
        case .setBlocked(let target, let on): return .setBlocked(target: s(target), on)
        case .setMuted(let target, let on): return .setMuted(target: s(target), on)
        }
    }
}
