/// When the SDK re-enters a room by itself after a lost connection (E8, the seed's retryCount and
/// autoLoginFailed).
public struct ReconnectPolicy: Sendable, Hashable {
    /// Attempts after a loss (the seed's retryCount): 0 never re-enters.
    public var retryCount: Int
    /// Attempt n waits n × delay first, so a restarting edge is not hammered.
    public var delay: Duration

    public init(retryCount: Int = 3, delay: Duration = .milliseconds(500)) {
        self.retryCount = retryCount
        self.delay = delay
    }

    /// Refusals another attempt cannot change: the user is blocklisted (13003), the room is closed (13002) or
    /// gone (404), the app is unknown (4012) or the token bad, expired or revoked (4010, 4011, 4015).
    /// Everything else (a dead address, no leader, a timeout) is worth another attempt.
    public static let finalCodes: Set<Int> = [
        ChatroomError.inBlocklist, ChatroomError.roomClosed, ChatroomError.roomNotFound,
        ChatroomError.badToken, ChatroomError.tokenExpired, ChatroomError.unknownApp, ChatroomError.tokenRevoked,
    ]

    public static func endsRetrying(_ error: ChatroomError) -> Bool { finalCodes.contains(error.code) }

    /// Whether the next address of the same attempt is worth trying after `error` on one address: only
    /// when the address itself (or its edge's view of the cluster) was the problem.
    static func triesNextAddress(_ error: ChatroomError) -> Bool {
        [ChatroomError.connectionLost, ChatroomError.timeout, ChatroomError.noLeader, ChatroomError.clusterTimeout].contains(error.code)
    }

    func wait(beforeAttempt attempt: Int) -> Duration { delay * attempt }
}
