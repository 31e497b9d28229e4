import ParleyWire

/// SPEC A1: how fast an app's clients may send messages into a room — each user on its own, and the room's
/// senders together — as token buckets (a rate per second and a burst). Kept per app in every shard's state
/// (`setSendBudget`), checked by the shard's leader before it proposes a client's message, so a send over
/// budget costs no Raft entry and no fan-out (416 with `retryAfterMs`). Messages the app server sends (the
/// server API) and the notifications the cluster emits are never charged.
///
/// Defaults follow the chat-room products: RongCloud lets one user send about 5 messages a second into a
/// chat room and NIM answers 416 on frequency control; 10 a second (bursts of 20) per user leaves room for
/// likes and gifts, and 200 a second per room (bursts of 400) is far above what members can read.
public struct SendBudget: Sendable, Hashable {
    public var userMessagesPerSecond: Int = 10
    public var userBurst: Int = 20
    public var roomMessagesPerSecond: Int = 200
    public var roomBurst: Int = 400

    public init() {}

    public init(userMessagesPerSecond: Int, userBurst: Int, roomMessagesPerSecond: Int, roomBurst: Int) {
        self.userMessagesPerSecond = userMessagesPerSecond
        self.userBurst = userBurst
        self.roomMessagesPerSecond = roomMessagesPerSecond
        self.roomBurst = roomBurst
    }

    /// The highest budgets there are, which turn the check off: what benchmarks and load tests give their
    /// apps, which measure replication and fan-out rather than the abuse limits.
    public static let unlimited = SendBudget(userMessagesPerSecond: 1_000_000, userBurst: 1_000_000,
                                             roomMessagesPerSecond: 1_000_000, roomBurst: 1_000_000)

    /// No limit at all (`unlimited`): no bucket is kept, and a replica that is not the room's leader passes
    /// the message on inside Raft like any command instead of calling the leader to be budgeted.
    public var isUnlimited: Bool { self == .unlimited }

    /// Rates 1 … 1,000,000 a second, bursts at least the rate and at most 1,000,000.
    public var isValid: Bool {
        let range = 1...1_000_000
        return range.contains(userMessagesPerSecond) && range.contains(roomMessagesPerSecond)
            && (userMessagesPerSecond...1_000_000).contains(userBurst)
            && (roomMessagesPerSecond...1_000_000).contains(roomBurst)
    }
}

extension SendBudget: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(userMessagesPerSecond)
        w.write(userBurst)
        w.write(roomMessagesPerSecond)
        w.write(roomBurst)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        userMessagesPerSecond = try r.readInt()
        userBurst = try r.readInt()
        roomMessagesPerSecond = try r.readInt()
        roomBurst = try r.readInt()
    }
}
