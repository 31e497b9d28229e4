/// One user's relationships on the user's shard (seed 004): friends, the remarks the user gave others,
/// friend requests both ways, the blocklist and the do-not-disturb list. The three relationships are
/// independent of each other. Dictionaries and sets are for lookup only; every listing is sorted.
public struct UserRecord: Sendable, Equatable {
    /// Friend → when the friendship began (entry time, ms).
    public internal(set) var friends: [String: Int64] = [:]
    /// The user's remark (alias) for another user; kept after an unfriending unless asked to drop it.
    public internal(set) var remarks: [String: String] = [:]
    /// Requests this user received, by requester.
    public internal(set) var incoming: [String: FriendRequest] = [:]
    /// Requests this user made, by target.
    public internal(set) var outgoing: [String: FriendRequest] = [:]
    public internal(set) var blocked: Set<String> = []
    /// Users whose messages come without an alert.
    public internal(set) var muted: Set<String> = []
    /// The teams the user is a member of (kept by the teams' shards through effects).
    public internal(set) var teams: Set<String> = []
    /// The conversation log (`ImLogItem`s by the user's sequence), within `ImLimits`' count and retention.
    public internal(set) var log = SequencedLog<ImLogKind>()
    /// Issue 38: peer → this user's read position in its conversation with the peer (this log's sequence).
    public internal(set) var readThrough: [String: UInt64] = [:]
    /// Issue 38: peer → the peer's read position of this user's messages (the peer's log's sequence).
    public internal(set) var peerReadThrough: [String: UInt64] = [:]

    public init() {}

    public var isEmpty: Bool {
        friends.isEmpty && remarks.isEmpty && incoming.isEmpty && outgoing.isEmpty && blocked.isEmpty && muted.isEmpty
            && teams.isEmpty
            && log.nextSeq == 1 && readThrough.isEmpty && peerReadThrough.isEmpty
    }

    public var friendList: [String] { friends.keys.sorted() }
    public var blocklist: [String] { blocked.sorted() }
    public var muteList: [String] { muted.sorted() }

    /// Appends a message this user receives, its `receiverSeq` the sequence it gets here.
    mutating func receive(_ message: P2PMessage, alert: Bool, at time: Int64, limits: ImLimits) -> ImLogItem {
        var m = message
        m.receiverSeq = log.nextSeq
        return log.append(.message(m, alert: alert), at: time, limits: limits)
    }
}

public struct FriendRequest: Sendable, Equatable {
    public var message: String
    /// Entry time of the request (ms).
    public var at: Int64

    public init(message: String, at: Int64) {
        self.message = message
        self.at = at
    }
}
