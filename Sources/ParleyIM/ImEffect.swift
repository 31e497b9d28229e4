/// What a command applied on one user's shard changes for another user, applied on that user's shard
/// (docs/im.md, "effects"): produced deterministically, relayed in order, applied once.
public struct ImEffect: Sendable, Equatable {
    public enum Change: Sendable, Equatable {
        /// `from` befriended the target without verification: the target befriends `from`.
        case befriendedBy
        /// `from` asks to be the target's friend.
        case requestedBy(message: String)
        /// `from` accepted the target's request: the target befriends `from`, its request goes.
        case acceptedBy
        /// `from` rejected the target's request: its request goes.
        case rejectedBy
        /// `from` unfriended the target: the target unfriends `from` (its remark for `from` stays).
        case unfriendedBy
        /// The target sent this one-to-one message, which `from` (its receiver) took: the copy for the
        /// sender's log, so its other devices and a later sync have it.
        case sentCopy(P2PMessage)
        /// The target is a member of this team now / no longer.
        /// `fromSeq`: the team log's sequence of the first item the new member belongs to (the notification
        /// of its joining), so its devices can fetch what they missed while they learned of it.
        case joinedTeam(String, fromSeq: UInt64)
        case leftTeam(String)
        /// A team notice for the target's log (an invitation, an application to a team it manages, a
        /// rejection of its application or of its invitation).
        case teamNotice(TeamNotice, teamId: String, message: String)
        /// Issue 38: `from` read its conversation with the target through this sequence of its own log.
        case peerRead(throughSeq: UInt64)
    }

    /// The user the effect is for.
    public var target: String
    /// The user whose command produced it.
    public var from: String
    public var change: Change
    /// The producing command's entry time (what the target records as "since" or "at").
    public var at: Int64

    public init(target: String, from: String, change: Change, at: Int64) {
        self.target = target
        self.from = from
        self.change = change
        self.at = at
    }
}

/// An effect waiting in its source shard's outbox, with its place in that shard's effect sequence.
public struct OutboxEntry: Sendable, Equatable {
    public var seq: UInt64
    public var effect: ImEffect

    public init(seq: UInt64, effect: ImEffect) {
        self.seq = seq
        self.effect = effect
    }
}
