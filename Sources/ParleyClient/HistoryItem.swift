/// One entry of `fetchMessageHistory`: history holds messages and notifications in one sequence
/// (docs/protocol.md "HistoryItem").
public enum HistoryItem: Sendable, Hashable, Decodable {
    case message(Message)
    case notification(ChatroomNotification)

    enum CodingKeys: String, CodingKey { case kind }

    public init(from decoder: any Decoder) throws {
        let kind = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .kind)
        switch kind {
        case "message": self = .message(try Message(from: decoder))
        case "notification": self = .notification(try ChatroomNotification(from: decoder))
        default:
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown history kind \(kind)"))
        }
    }

    /// The room sequence number of the entry.
    public var seq: Int64 {
        switch self {
        case .message(let m): m.seq
        case .notification(let n): n.seq
        }
    }
}
