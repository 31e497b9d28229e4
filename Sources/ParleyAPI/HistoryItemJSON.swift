import ParleyRooms

/// N5: one history item: a message, or a notification (type 301-320).
struct HistoryItemJSON: Encodable, Sendable {
    var seq: UInt64
    var time: Int64
    /// A message type name, or "notification".
    var type: String
    var fromAccid: String
    var fromNick: String
    var msgId: String
    var body: String
    var ext: String
    /// Notifications only: the N3 event type.
    var eventType: Int?
    var targets: [String]?
    var notifyExt: String?
    /// Messages only (D3): high, normal or low.
    var priority: String?

    init(_ item: HistoryItem) {
        switch item {
        case .message(let m):
            seq = m.seq
            time = m.time
            type = FieldRule.name(of: m.type, in: FieldRule.historyTypes)
            fromAccid = m.senderId
            fromNick = m.senderNickname
            msgId = m.clientMessageId
            body = m.body
            ext = m.ext
            priority = m.priority.name
        case .notification(let n):
            seq = n.seq
            time = n.time
            type = "notification"
            fromAccid = n.source.userId
            fromNick = n.source.nickname
            msgId = ""
            body = ""
            ext = n.sourceRoomExt
            eventType = Int(n.type.rawValue)
            targets = n.targets.map(\.userId)
            notifyExt = n.notifyExt
        }
    }
}
