import ParleyRooms

/// N1 / N2 / N5: messages sent by the app server, broadcasts, and history reads.
///
/// `msgId` is the message's clientMessageId: the state machine answers a resend (same sender, same id, among
/// the room's latest 100 stored items) with the original's seq instead of sending it twice. One gap, refused
/// rather than faked (docs/api.md): every message is stored in history, so `skipHistory: true` is refused.
enum MessageEndpoints {
    /// The sender id of a message the app server sends as the system rather than as a user.
    static let systemSender = "$system"

    /// What a send and a broadcast share.
    struct Message: Decodable, Sendable {
        /// The sending account; absent = the system (`$system`).
        var fromAccid: String?
        /// text, image, audio, video, location, file, tip or custom (never notification, N2).
        var type: String
        var body: String
        var ext: String?
        var msgId: String?
        var skipHistory: Bool?
        /// D3: high, normal (absent) or low.
        var priority: String?
    }

    /// A message and the room it goes to, from one flat JSON object.
    struct Send: Decodable, Sendable {
        var roomId: String
        var message: Message

        init(from decoder: any Decoder) throws {
            roomId = try decoder.container(keyedBy: Key.self).decode(String.self, forKey: .roomId)
            message = try Message(from: decoder)
        }

        private enum Key: String, CodingKey { case roomId }
    }

    struct History: Decodable, Sendable {
        var roomId: String
        /// Unix ms; 0 or absent = now (descending) or the beginning (ascending).
        var startTime: Int64?
        var limit: Int
        var ascending: Bool?
        /// Type names to keep (notification included); absent or empty = all.
        var types: [String]?
    }

    struct SentAnswer: Encodable, Sendable { var seq: UInt64; var time: Int64 }
    struct Failure: Encodable, Sendable { var roomId: String; var code: Int; var desc: String }
    struct BroadcastAnswer: Encodable, Sendable { var rooms: Int; var failed: [Failure] }
    struct HistoryAnswer: Encodable, Sendable { var items: [HistoryItemJSON] }

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/message/send", Send.self) { api, b, _ in
            let message = try await sendMessage(roomId: b.roomId, b.message, api)
            guard case .messageSent(let seq, let time, _) = try await api.room(.sendMessage(message), roomId: b.roomId) else {
                throw APIError(.unavailable, "unexpected reply to a send")
            }
            return SentAnswer(seq: seq, time: time)
        },
        // Walks the rooms of every shard (in id order, a page at a time) and sends to each open room; closed
        // rooms are listed as failed. Rooms created during the walk may or may not get the message.
        // The calling app's rooms only (A8).
        .post("/v1/message/broadcast", Message.self) { api, b, app in
            let template = try await sendMessage(roomId: "", b, api)
            let namespace = api.namespace(app)
            var sent = 0
            var failed: [Failure] = []
            for shard in 0..<api.backend.shardCount {
                var after = ""
                while true {
                    let page = try ServerAPI.reply(try await api.submit(.listRooms(after: after, limit: 500), shard: shard))
                    guard case .roomIds(let ids) = page, let last = ids.last else { break }
                    for id in ids where AppScope.namespace(of: id) == namespace {
                        var m = template
                        m.roomId = id
                        let outcome = try await api.submit(.sendMessage(m), shard: shard)
                        if case .failure(let e) = outcome.result {
                            failed.append(Failure(roomId: AppScope.local(id), code: e.code.rawValue, desc: e.message))
                        } else {
                            sent += 1
                        }
                    }
                    after = last
                }
            }
            return BroadcastAnswer(rooms: sent, failed: failed)
        },
        .post("/v1/message/history", History.self) { api, b, _ in
            let types = try FieldRule.pick(all: b.types ?? [], FieldRule.historyTypes, "types")
            let query = HistoryQuery(roomId: b.roomId, startTime: b.startTime ?? 0, limit: b.limit,
                                     ascending: b.ascending ?? false, types: types)
            guard case .history(let items) = try await api.room(.fetchHistory(query), roomId: b.roomId) else {
                throw APIError(.unavailable, "unexpected reply to a history read")
            }
            return HistoryAnswer(items: items.map(HistoryItemJSON.init))
        },
    ]

    /// D3's names, as `MessagePriority` spells them (one table for clients and the server API).
    static let priorities = Dictionary(uniqueKeysWithValues: MessagePriority.allCases.map { ($0.name, $0) })

    private static func sendMessage(roomId: String, _ m: Message, _ api: ServerAPI) async throws -> SendMessage {
        guard m.skipHistory != true else {
            throw APIError(.badField, "skipHistory is not supported: every message is stored in history")
        }
        let kind = try FieldRule.pick(m.type, FieldRule.messageTypes, "type")
        if let from = m.fromAccid { try FieldRule.id(from, "fromAccid") }
        var priority = try FieldRule.pick(optional: m.priority, priorities, "priority") ?? .normal
        // D3: written (command tag 40) only once every node reads it; until then the message goes as normal.
        if priority != .normal, !(await api.backend.everyNodeHas(.messagePriority)) { priority = .normal }
        return SendMessage(roomId: roomId, type: kind, clientMessageId: m.msgId ?? "", body: m.body, ext: m.ext ?? "",
                           fromUser: m.fromAccid ?? systemSender, priority: priority)
    }
}
