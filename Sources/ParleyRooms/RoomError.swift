/// Stable numeric codes of every way a room command can fail. NIM's codes where NIM has one,
/// Parley's own 131xx range otherwise; docs/rooms.md lists them all.
public enum RoomErrorCode: Int, Sendable, CaseIterable {
    /// A field is empty, oversized or out of range.
    case badParameter = 414
    /// The actor's role does not allow the operation.
    case noPermission = 403
    /// No room with that id in this shard.
    case roomNotFound = 404
    /// The requested state already holds (room exists, already manager, already muted …).
    case alreadyInState = 417
    /// The room already has `maxFixedMembers` fixed members.
    case tooManyFixedMembers = 419
    /// The room is closed.
    case roomClosed = 13002
    /// The user is on the room's blocklist.
    case inBlocklist = 13003
    /// The user is permanently muted in the room.
    case muted = 13004
    /// Room-wide mute: only the creator, managers and allowlisted users may speak.
    case roomMuted = 13006
    /// The acting session has not entered the room (R3).
    case notEntered = 13100
    /// The user is already in `maxRoomsPerUser` rooms (E3).
    case tooManyRooms = 13101
    /// Anonymous users receive but cannot send (E5).
    case anonymousCannotSend = 13102
    /// The user is temporarily muted.
    case tempMuted = 13103
    /// The user is globally muted (M9).
    case globallyMuted = 13104
    /// The target user is not a member (or not online, where that is required).
    case memberNotFound = 13105
    /// The queue already holds its maximum number of elements.
    case queueFull = 13106
    /// The queue is empty or has no element with that key.
    case queueElementNotFound = 13107
    /// A command tag no version of Parley knows.
    case unknownOperation = 13108
    /// A command whose bytes cannot be decoded.
    case malformedCommand = 13109
    /// The role change is not one M2 allows (e.g. a manager made an ordinary member).
    case invalidRoleTransition = 13110
    /// The session id is already in the room.
    case sessionAlreadyEntered = 13111
    /// X2: a resume asked for items that retention already dropped ("gap too old").
    case historyGone = 13112
    /// A7: the signed server-API request that carried this command was applied already (the server API's
    /// reused-nonce code).
    case requestReplayed = 10406
    /// A7: the app has too many signed writes in the signature window on this shard (the API's 10429).
    case tooManyRequests = 10429
    /// A1: the sender's or the room's message budget is spent (NIM's frequency-control code); decided by the
    /// shard leader before proposing, so nothing was written. The message says when to retry.
    case sendRateLimited = 416
    /// SPEC W3: the app server's pre-send callback rejected the message; nothing was stored. The message
    /// carries the app's own code and reason.
    case rejectedByApp = 13113
    /// SPEC W3: the app server's pre-send callback did not answer usably (a timeout, an error, a malformed
    /// answer) and the app refuses unchecked messages (`onFailure: refuse`); nothing was stored.
    case uncheckedByApp = 13114
}

/// A failed command: a stable code and a human-readable message.
public struct RoomError: Error, Hashable, Sendable {
    public var code: RoomErrorCode
    public var message: String

    public init(_ code: RoomErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension RoomError {
    /// A1: a message over budget, to be retried after `retryAfterMillis`.
    public static func sendRateLimited(retryAfterMillis: Int64) -> RoomError {
        RoomError(.sendRateLimited, "message budget spent; retry after \(retryAfterMillis) ms")
    }

    /// The wait a `sendRateLimited` refusal names (it travels between nodes inside the message).
    public var retryAfterMillis: Int64? {
        guard code == .sendRateLimited, let after = message.split(separator: " ").dropLast().last else { return nil }
        return Int64(after)
    }
}
