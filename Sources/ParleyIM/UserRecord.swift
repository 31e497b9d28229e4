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
    /// The sequence of the user's next system notification (and, later, conversation item).
    public internal(set) var nextSeq: UInt64 = 1

    public init() {}

    public var isEmpty: Bool {
        friends.isEmpty && remarks.isEmpty && incoming.isEmpty && outgoing.isEmpty && blocked.isEmpty && muted.isEmpty
            && nextSeq == 1
    }

    public var friendList: [String] { friends.keys.sorted() }
    public var blocklist: [String] { blocked.sorted() }
    public var muteList: [String] { muted.sorted() }
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
