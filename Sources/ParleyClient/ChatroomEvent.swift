/// Everything the SDK reports without being asked: the server's events (docs/protocol.md "Events") and the
/// SDK's own connection states (the seed's NIMChatroomManagerDelegate).
public enum ChatroomEvent: Sendable, Hashable {
    case message(roomId: String, Message)
    case notification(roomId: String, ChatroomNotification)
    /// The session has left the room (E9); the SDK will not re-enter it by itself.
    case kicked(roomId: String, reason: KickReason, ext: String)
    case status(roomId: String, RoomStatus)
    case memberChange(roomId: String, MemberChange)
    case multiLoginSync(roomId: String, MultiLoginSync)
    case block(roomId: String, BlockNotice)
    case ban(roomId: String, BanNotice)
    /// Room events in `fromSeq...toSeq` were lost and are not in history any more: refetch state (X2).
    case gap(roomId: String, fromSeq: Int64, toSeq: Int64)
    /// D2 / D3: the room's messages in `ranges` were not delivered to this connection (`reason` "rate": above the
    /// room's ceiling on its edge; "slow": skipped while the connection was behind); they are in history.
    case shed(roomId: String, reason: String, ranges: [ClosedRange<Int64>])
    case connectionState(roomId: String, ConnectionState)
    /// An automatic re-enter after a lost connection failed for good (E8): the app should exit the room.
    case autoLoginFailed(roomId: String, ChatroomError)

    public var roomId: String {
        switch self {
        case .message(let r, _), .notification(let r, _), .kicked(let r, _, _), .status(let r, _),
             .memberChange(let r, _), .multiLoginSync(let r, _), .block(let r, _), .ban(let r, _),
             .gap(let r, _, _), .shed(let r, _, _), .connectionState(let r, _), .autoLoginFailed(let r, _):
            r
        }
    }
}

/// The seed's NIMChatroomConnectionState.
public enum ConnectionState: Int, Sendable, Hashable, Codable {
    case entering = 0
    case enterOK = 1
    case enterFailed = 2
    case loseConnection = 3
}

/// The seed's NIMChatroomKickReason, over the wire integer so a reason added later still decodes.
public struct KickReason: RawRepresentable, Sendable, Hashable, Codable, ExpressibleByIntegerLiteral {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(integerLiteral value: Int) { rawValue = value }

    public static let invalidRoom: KickReason = 1
    public static let byManager: KickReason = 2
    public static let byConflictLogin: KickReason = 3
    public static let blacklist: KickReason = 5
}

/// RC status events (E11).
public enum RoomStatus: Sendable, Hashable, Decodable {
    case joined(memberCount: Int, time: Int64)
    case quit
    case destroyed(type: Int)
    /// The cluster ended the session while the connection was up (its edge lost its lease on the room's
    /// shard): the client re-enters by itself, as after a disconnect, resuming from what it has seen.
    case lost

    enum CodingKeys: String, CodingKey { case status, memberCount, time, type }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let status = try c.decode(String.self, forKey: .status)
        switch status {
        case "joined": self = .joined(memberCount: try c.decode(Int.self, forKey: .memberCount), time: try c.decode(Int64.self, forKey: .time))
        case "quit": self = .quit
        case "lost": self = .lost
        case "destroyed": self = .destroyed(type: try c.decode(Int.self, forKey: .type))
        default:
            throw DecodingError.dataCorruptedError(forKey: .status, in: c, debugDescription: "unknown status \(status)")
        }
    }
}

/// RC member change event (E12).
public struct MemberChange: Sendable, Hashable, Codable {
    public struct Action: Sendable, Hashable, Codable {
        public enum Kind: String, Sendable, Hashable, Codable { case join, quit }
        public var userId: String
        public var action: Kind
    }

    public var actions: [Action]
    public var memberCount: Int
}

/// Another device of the same user joined or left the room (E7).
public struct MultiLoginSync: Sendable, Hashable, Codable {
    public var joined: Bool
    /// Why the other device left: 1 voluntary, 2 kicked by a join elsewhere (absent on a join).
    public var reason: Int?
    public var time: Int64
}

/// RC block event (M8): users blocked (or unblocked) for `durationMs`.
public struct BlockNotice: Sendable, Hashable, Codable {
    public var blocked: Bool
    public var durationMs: Int64
    public var operateTime: Int64
    public var userIds: [String]
    public var extra: String
}

/// RC ban (mute) event (M8, M9, R5, R6); `banType` 0-7 as docs/rooms.md lists them.
public struct BanNotice: Sendable, Hashable, Codable {
    public var banType: Int
    public var durationMs: Int64
    public var operateTime: Int64
    public var userIds: [String]
    public var extra: String
}
