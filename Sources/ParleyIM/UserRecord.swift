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
    /// (sender, clientMessageId) → the receiver's sequence of a message received and still in the log.
    var received: [String: UInt64] = [:]

    public init() {}

    public var isEmpty: Bool {
        friends.isEmpty && remarks.isEmpty && incoming.isEmpty && outgoing.isEmpty && blocked.isEmpty && muted.isEmpty
            && teams.isEmpty
            && log.nextSeq == 1
    }

    public var friendList: [String] { friends.keys.sorted() }
    public var blocklist: [String] { blocked.sorted() }
    public var muteList: [String] { muted.sorted() }

    static func receivedKey(_ sender: String, _ clientMessageId: String) -> String { sender + "\u{0}" + clientMessageId }

    /// Appends a message this user receives, remembering its (sender, clientMessageId) for resends.
    mutating func receive(_ message: P2PMessage, alert: Bool, at time: Int64, limits: ImLimits) -> ImLogItem {
        var m = message
        m.receiverSeq = log.nextSeq
        let item = append(.message(m, alert: alert), at: time, limits: limits)
        if !m.clientMessageId.isEmpty, log.entry(seq: item.seq) != nil {
            received[Self.receivedKey(m.from, m.clientMessageId)] = item.seq
        }
        return item
    }

    /// Appends an item to the log, forgetting the resend keys of what the bounds dropped.
    @discardableResult
    mutating func append(_ kind: ImLogKind, at time: Int64, limits: ImLimits) -> ImLogItem {
        let (item, dropped) = log.append(kind, at: time, limits: limits)
        for old in dropped {
            if case .message(let m, _) = old.kind, received[Self.receivedKey(m.from, m.clientMessageId)] == old.seq {
                received[Self.receivedKey(m.from, m.clientMessageId)] = nil
            }
        }
        return item
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
