/// An error answered by the server (the codes of docs/protocol.md and docs/rooms.md) or raised by the SDK
/// itself (408, 415: NIM's codes for a timed-out request and a lost connection).
public struct ChatroomError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public var code: Int
    public var message: String
    /// For `rateLimited` (416) and too many failed logins (4017): how long to wait before trying again.
    public var retryAfterMs: Int64?

    public init(code: Int, message: String, retryAfterMs: Int64? = nil) {
        self.code = code
        self.message = message
        self.retryAfterMs = retryAfterMs
    }

    public var description: String { "ChatroomError(\(code): \(message))" }

    // SDK-side codes.
    /// No answer within the request timeout (the command may or may not have applied).
    public static let timeout = 408
    /// The connection is gone (or was never made): the request was not answered.
    public static let connectionLost = 415

    // Protocol codes the SDK acts on.
    public static let noPermission = 403
    public static let roomNotFound = 404
    public static let badParameter = 414
    public static let roomClosed = 13002
    public static let inBlocklist = 13003
    public static let notEntered = 13100
    public static let historyGone = 13112
    public static let noCommonVersion = 4001
    public static let badToken = 4010
    public static let tokenExpired = 4011
    public static let unknownApp = 4012
    public static let otherAccount = 4013
    public static let tokenRevoked = 4015
    public static let alreadyInRoom = 4016
    /// A1: over the connection's request budget or the room's message budgets; wait `retryAfterMs`.
    public static let rateLimited = 416
    public static let noLeader = 5030
    public static let clusterTimeout = 5040

    static func lost(_ why: String) -> ChatroomError { ChatroomError(code: connectionLost, message: why) }
}
