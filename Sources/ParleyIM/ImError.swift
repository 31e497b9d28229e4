/// Why an IM command changed nothing (docs/im.md). Codes of the 142xx range, beside the rooms' 13xxx.
public enum ImErrorCode: Int, Sendable, Equatable, Codable, CaseIterable {
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
    /// A sync asked for items the log no longer keeps (over `maxLogItems` or older than the retention).
    case historyGone = 14207
    /// The operator's role (or not being a member) does not allow it; notifyExt from a client.
    case noPermission = 14208
    case noSuchTeam = 14209
    case teamExists = 14210
    /// Sending while muted, or while the team is muted for normal members.
    case teamMuted = 14211
    /// Applying to a team whose join mode rejects every application.
    case applicationsRejected = 14212
    case alreadyMember = 14213
    case notMember = 14214
    /// Accepting or rejecting with no invitation; approving or rejecting with no application.
    case noInvitation = 14215
    case teamFull = 14216
    /// An IM op names an account the app does not have (checked by the edge before anything is proposed).
    case noSuchUser = 14217
    /// SPEC W3: the app server, shown the one-to-one or team message first (`preSend.im`), rejected it; the
    /// message names the app's code and reason. Nothing is stored.
    case rejectedByApp = 14218
    /// SPEC W3: the app server did not answer usably in time and the app refuses unchecked messages.
    case uncheckedByApp = 14219
    /// SPEC A1: a client's message over its sender's or its team's / receiver's budget; the message names the
    /// wait ("retry after N ms", as the rooms' 416 does).
    case sendRateLimited = 416
    /// SPEC A7 for IM writes through the server API: the same signed request applied already (the rooms' code).
    case requestReplayed = 10406
    /// The app holds too many live request keys in the shard (the rooms' code).
    case tooManyRequests = 10429
}

public struct ImError: Error, Sendable, Equatable {
    public var code: ImErrorCode
    public var message: String

    public init(_ code: ImErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}
