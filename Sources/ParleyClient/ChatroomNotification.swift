/// A room notification, 301-320 (docs/protocol.md "Notification"; SPEC N3). Not named `Notification`, which
/// would clash with Foundation's in every app that imports both.
public struct ChatroomNotification: Sendable, Hashable, Codable {
    /// A user a notification names (operator or target).
    public struct User: Sendable, Hashable, Codable {
        public var userId: String
        public var nickname: String
        public init(userId: String, nickname: String) {
            self.userId = userId
            self.nickname = nickname
        }
    }

    public var seq: Int64
    public var time: Int64
    public var type: NotificationType
    public var source: User
    /// The operator's roomExt of that entry (E1).
    public var sourceExt: String
    public var targets: [User]
    public var notifyExt: String
    public var ext: NotificationExt

    enum CodingKeys: String, CodingKey { case seq, time, type, source, sourceExt, targets, notifyExt, ext }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        seq = try c.decode(Int64.self, forKey: .seq)
        time = try c.decode(Int64.self, forKey: .time)
        type = try c.decode(NotificationType.self, forKey: .type)
        source = try c.decode(User.self, forKey: .source)
        sourceExt = try c.decode(String.self, forKey: .sourceExt)
        targets = try c.decode([User].self, forKey: .targets)
        notifyExt = try c.decode(String.self, forKey: .notifyExt)
        // `ext` is null for most types; an absent key means the same.
        ext = try c.decodeIfPresent(NotificationExt.self, forKey: .ext) ?? .none
    }
}

/// The notification types of the seed (NIMChatroomEventType), over the wire integer so an unknown type still
/// decodes.
public struct NotificationType: RawRepresentable, Sendable, Hashable, Codable, ExpressibleByIntegerLiteral {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(integerLiteral value: Int) { rawValue = value }

    public static let enter: NotificationType = 301
    public static let exit: NotificationType = 302
    public static let addBlack: NotificationType = 303
    public static let removeBlack: NotificationType = 304
    public static let addMute: NotificationType = 305
    public static let removeMute: NotificationType = 306
    public static let addManager: NotificationType = 307
    public static let removeManager: NotificationType = 308
    public static let addCommon: NotificationType = 309
    public static let removeCommon: NotificationType = 310
    public static let closed: NotificationType = 311
    public static let infoUpdated: NotificationType = 312
    public static let kicked: NotificationType = 313
    public static let addMuteTemporarily: NotificationType = 314
    public static let removeMuteTemporarily: NotificationType = 315
    public static let memberUpdateInfo: NotificationType = 316
    public static let queueChange: NotificationType = 317
    public static let roomMuted: NotificationType = 318
    public static let roomUnMuted: NotificationType = 319
    public static let queueBatchChange: NotificationType = 320
}

/// The `ext` of a notification: the temporary-mute duration (314 / 315), one queue change (317) or a batch of
/// queue changes (320 PartClear, 317 batch update).
public enum NotificationExt: Sendable, Hashable, Codable {
    case none
    case muteDuration(seconds: Int64)
    case queueChange(QueueChange, key: String, value: String)
    case queueBatch(QueueChange, elements: [QueueElement])

    /// The seed's queue change types (NIMChatroomQueueChangeType / QueueBatchChangeType).
    public enum QueueChange: String, Sendable, Hashable, Codable {
        case offer, poll, drop, update, partClear, batchUpdate
    }

    enum CodingKeys: String, CodingKey { case muteDuration, change, key, value, elements }

    public init(from decoder: any Decoder) throws {
        if try decoder.singleValueContainer().decodeNil() { self = .none; return }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let seconds = try c.decodeIfPresent(Int64.self, forKey: .muteDuration) {
            self = .muteDuration(seconds: seconds)
            return
        }
        let change = try c.decode(QueueChange.self, forKey: .change)
        if let elements = try c.decodeIfPresent([QueueElement].self, forKey: .elements) {
            self = .queueBatch(change, elements: elements)
            return
        }
        // A drop names no element: key and value are then absent.
        self = .queueChange(change, key: try c.decodeIfPresent(String.self, forKey: .key) ?? "",
                            value: try c.decodeIfPresent(String.self, forKey: .value) ?? "")
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .none:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .muteDuration(let seconds):
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(seconds, forKey: .muteDuration)
        case .queueChange(let change, let key, let value):
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(change, forKey: .change)
            try c.encode(key, forKey: .key)
            try c.encode(value, forKey: .value)
        case .queueBatch(let change, let elements):
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(change, forKey: .change)
            try c.encode(elements, forKey: .elements)
        }
    }
}
