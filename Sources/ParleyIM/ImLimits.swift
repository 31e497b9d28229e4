/// Sizes and counts an IM command may not exceed (docs/im.md, the NIM limits where the seeds name them).
public struct ImLimits: Sendable, Equatable {
    public var maxAccountBytes = 128
    public var maxRemarkBytes = 128
    public var maxRequestMessageBytes = 256
    public var maxFriends = 3000
    public var maxBlocked = 3000
    public var maxMuted = 3000
    public var maxClientMessageIdBytes = 128
    public var maxBodyBytes = 5000
    public var maxExtBytes = 1024
    public var maxTypeBytes = 32
    /// A user's conversation log keeps at most this many items, and none older than the retention: a device
    /// away longer syncs what is left and is told what it missed (`historyGone`).
    public var maxLogItems = 5000
    public var logRetentionMillis: Int64 = 10 * 24 * 3600 * 1000
    public var maxSyncItems = 500
    public var maxTeamIdBytes = 128
    public var maxTeamMembers = 2000
    /// A supergroup's member cap (issue 38; NIM's supergroups reach ten thousand).
    public var maxSuperTeamMembers = 10_000
    /// A user is a member of at most this many teams (seed 001's NIM limit): a command that would add a user
    /// in this many already is refused with `limitExceeded` (14206), checked on the user's shard first.
    public var maxTeamsPerUser = 500
    public var maxTeamNameBytes = 64
    public var maxTeamTextBytes = 1024
    public var maxNotifyExtBytes = 1024
    public var maxTargets = 200
    /// A friend request nobody answered is no longer answerable after this long (entry time, ms).
    public var requestLifetimeMillis: Int64 = 30 * 24 * 3600 * 1000

    public init() {}

    /// The member cap of a team of this type.
    public func maxMembers(of type: TeamType) -> Int { type == .superTeam ? maxSuperTeamMembers : maxTeamMembers }
}
