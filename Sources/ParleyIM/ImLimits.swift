/// Sizes and counts an IM command may not exceed (docs/im.md, the NIM limits where the seeds name them).
public struct ImLimits: Sendable, Equatable {
    public var maxAccountBytes = 128
    public var maxRemarkBytes = 128
    public var maxRequestMessageBytes = 256
    public var maxFriends = 3000
    public var maxBlocked = 3000
    public var maxMuted = 3000
    /// A friend request nobody answered is no longer answerable after this long (entry time, ms).
    public var requestLifetimeMillis: Int64 = 30 * 24 * 3600 * 1000

    public init() {}
}
