import ParleyIM
import ParleyRooms

/// Issue 38: read receipts as the app server reads them (docs/api.md, "Read receipts"): who read a team's
/// messages (seed 001's team message receipts), and a user's one-to-one conversations with their unread
/// counts and both read positions (NIM's P2P receipt). Available once every node reads them (peer protocol 11).
enum ReceiptEndpoints {
    struct TeamReceipts: Decodable, Sendable {
        var tid: String
        /// The team messages' sequences (1 … 100).
        var seqs: [UInt64]
    }

    struct Account: Decodable, Sendable { var accid: String }

    struct ReceiptJSON: Encodable, Sendable {
        var seq: UInt64
        var from: String
        var readCount: Int
        var unreadCount: Int
        var readers: [String]
        var unread: [String]
    }

    struct ConversationJSON: Encodable, Sendable {
        var peer: String
        var last: ImItemJSON
        var unread: Int
        var readThrough: UInt64
        var peerReadThrough: UInt64
    }

    struct TeamConversationJSON: Encodable, Sendable {
        var tid: String
        var last: TeamJSON.Item?
        var unread: Int
        var readThrough: UInt64
    }

    struct Receipts: Encodable, Sendable { var receipts: [ReceiptJSON] }
    struct Conversations: Encodable, Sendable { var conversations: [ConversationJSON]; var teams: [TeamConversationJSON] }

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/team/receipts", TeamReceipts.self) { api, b, app in
            guard (1...ImShardState.maxReceiptSeqs).contains(b.seqs.count) else {
                throw APIError(.badField, "seqs: 1 to \(ImShardState.maxReceiptSeqs) sequences")
            }
            try await api.requireReceipts()
            let tid = try api.scopedTeam(app, b.tid)
            guard case .read(.teamReceipts(let list)) = try await api.team(read: .teamReceipts(teamId: tid, seqs: b.seqs), tid) else {
                throw APIError(.unavailable, "unexpected reply to a read")
            }
            return Receipts(receipts: list.map {
                ReceiptJSON(seq: $0.seq, from: AppScope.local($0.from), readCount: $0.readers.count, unreadCount: $0.unread.count,
                            readers: $0.readers.map(AppScope.local), unread: $0.unread.map(AppScope.local))
            })
        },
        .post("/v1/msg/conversations", Account.self) { api, b, app in
            try await api.requireReceipts()
            let (me, _) = try await api.accounts(app, b.accid)
            guard case .read(.conversations(let list, let teams)) = try await api.im(.read(.conversations), for: me) else {
                throw APIError(.unavailable, "unexpected reply to a read")
            }
            return Conversations(conversations: list.map {
                ConversationJSON(peer: AppScope.local($0.peer), last: ImItemJSON($0.last), unread: $0.unread,
                                 readThrough: $0.readThrough, peerReadThrough: $0.peerReadThrough)
            }, teams: teams.map {
                TeamConversationJSON(tid: AppScope.local($0.teamId), last: $0.last.map(TeamJSON.Item.init), unread: $0.unread,
                                     readThrough: $0.readThrough)
            })
        },
    ]
}

extension ServerAPI {
    /// Read receipts wait until every node reads them (a rolling upgrade to peer protocol 11).
    func requireReceipts() async throws {
        guard await backend.everyNodeHas(.readReceipts) else {
            throw APIError(.unavailable, "read receipts wait until every node reads them (peer protocol 11): finish the upgrade")
        }
    }
}
