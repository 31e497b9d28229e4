/// E1: what a successful enter returns.
public struct EnterResult: Sendable, Hashable {
    public var room: RoomInfoView
    public var member: MemberView
    /// E5: the auth mode of this room session.
    public var authMode: AuthMode
}

/// The result of a successful command. Large payloads are boxed (`indirect`) so the common
/// small replies (a send's seq and time) stay cheap to return.
public enum RoomReply: Sendable, Hashable {
    case done
    indirect case roomInfo(RoomInfoView)
    indirect case entered(EnterResult)
    /// `serverId`: the message's id in the whole service (the log index of its command), so the sender's
    /// answer needs nothing else of it (issue 34: a forwarded answer carries ids, not the message again).
    case messageSent(seq: UInt64, time: Int64, serverId: UInt64)
    case members([MemberView])
    /// Q5: the removed element.
    case queueElement(QueueEntry)
    /// Q1: every element in order.
    case queue([QueueEntry])
    /// Q4: the keys of a batch update that were not in the queue.
    case keysNotFound([String])
    case history([HistoryItem])
    /// How many sessions a `sessionLost` ended.
    case sessionsEnded(Int)
    /// A page of room ids (`listRooms`).
    case roomIds([String])
}

/// What `apply` returns: the result and the events the command caused (none on failure).
public struct ApplyOutcome: Sendable, Hashable {
    public var result: Result<RoomReply, RoomError>
    public var events: [RoomEvent]

    public init(result: Result<RoomReply, RoomError>, events: [RoomEvent]) {
        self.result = result
        self.events = events
    }

    /// The error code, or nil on success.
    public var errorCode: RoomErrorCode? {
        if case .failure(let e) = result { return e.code }
        return nil
    }
}

/// Scratch collected while one command applies: its events and who came online or went offline
/// in the room, so the state can keep its user-to-rooms index (E3) current.
struct ApplyEffects {
    var events: [RoomEvent] = []
    /// Items added to history (the node also writes them to its durable history store).
    var stored: [StoredHistoryItem] = []
    /// SPEC D1: the change of the rooms' window bytes, and the rooms whose oldest window item changed.
    var windowBytes = 0
    var newWindowHeads: [String] = []
    var online: [String] = []
    var offline: [String] = []
    /// W2: what the app server hears of, kept only when the shard collects it (some app wants after-event
    /// callbacks).
    var activity: [RoomActivity] = []
    var collectsActivity = false

    mutating func record(_ a: @autoclosure () -> RoomActivity) {
        if collectsActivity { activity.append(a()) }
    }
}

/// Everything a room needs to know about the entry being applied.
struct ApplyEnv {
    let context: ApplyContext
    let limits: RoomLimits
    let policy: AppPolicy

    var now: Int64 { context.timestamp }
}
