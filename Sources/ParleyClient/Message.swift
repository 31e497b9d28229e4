/// A chat message (docs/protocol.md "Message"; SPEC N1).
public struct Message: Sendable, Hashable, Codable {
    public var seq: Int64
    public var serverId: Int64
    public var time: Int64
    public var from: String
    public var fromNickname: String
    public var fromAvatar: String
    /// The sender's roomExt of that entry (E1).
    public var fromExt: String
    public var type: MessageType
    public var clientMessageId: String
    public var body: String
    public var ext: String
    /// D3: "high" or "low" when its sender set one (nil: normal).
    public var priority: String? = nil
}

/// A message type. A struct over the wire string rather than an enum, so a type added by a later server
/// version decodes instead of failing the whole frame.
public struct MessageType: RawRepresentable, Sendable, Hashable, Codable, ExpressibleByStringLiteral {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    public static let text: MessageType = "text"
    public static let image: MessageType = "image"
    public static let audio: MessageType = "audio"
    public static let video: MessageType = "video"
    public static let location: MessageType = "location"
    public static let file: MessageType = "file"
    public static let tip: MessageType = "tip"
    public static let custom: MessageType = "custom"
    /// Only in history and events: clients never send notifications (N2).
    public static let notification: MessageType = "notification"
}
