/// Why an IM command changed nothing (docs/im.md). Codes of the 142xx range, beside the rooms' 13xxx.
public enum ImErrorCode: Int, Sendable, Equatable, Codable {
    /// An id empty or over `ImLimits`, a field over its size.
    case badParameter = 414
    /// The receiver has the sender on its blocklist: the one-to-one message is stored nowhere.
    case blocked = 14201
    /// A friend operation, a blocklist or do-not-disturb entry naming oneself.
    case oneself = 14202
    case alreadyFriends = 14203
    case notFriend = 14204
    /// Verify or reject with no (unexpired) request from that user.
    case noRequest = 14205
    /// Friends, blocklist or do-not-disturb list full.
    case limitExceeded = 14206
}

public struct ImError: Error, Sendable, Equatable {
    public var code: ImErrorCode
    public var message: String

    public init(_ code: ImErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}
