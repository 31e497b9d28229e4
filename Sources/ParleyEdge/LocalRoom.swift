import NIOCore
import ParleyRooms
import ParleyCluster
import ParleyPlacement

/// A room with at least one session on this edge: who is here, and how far its room-wide events have been
/// delivered (X2 ordering).
struct LocalRoom {
    let shard: ShardID
    /// The app whose room it is (its limits: D3's ceiling).
    let app: String
    /// The highest room seq delivered (nil until the feed shows the first one).
    var lastSeq: UInt64?
    /// Keyed by connection number. Any change drops `audience`.
    var sessions: [UInt64: LocalSession] = [:] {
        didSet { audience = nil }
    }
    /// Issue 35: who a room-wide event goes to, built once and kept while the sessions stay as they are — the
    /// steady sessions' sockets by event loop (one hand-over per loop, the loop writes to each), and the others,
    /// each checked on its own as before.
    var audience: RoomAudience?
    /// D3: the room's messages delivered here against its app's ceiling, the ones shed above it that its
    /// sessions have not been told of yet, and whether a notice is scheduled.
    var rate = RoomDeliveryRate()
    var shed = ShedSeqs()
    var shedNoticeDue = false

    /// The room's audience for events with seq above `floorBelow` (and seq-0 events): a session is steady when
    /// it neither buffers nor exits and its floor is at most `floorBelow`, so every such event reaches it.
    func makeAudience(floorBelow: UInt64) -> RoomAudience {
        var byLoop: [ObjectIdentifier: (outbox: LoopOutbox, sockets: [ClientSocket])] = [:]
        var others: [(connection: UInt64, session: LocalSession)] = []
        // One pass, no sort: a room in an enter storm rebuilds this for each event, as the edge visited every
        // member before.
        for (connection, session) in sessions {
            if !session.buffering && !session.exiting && session.floor <= floorBelow {
                byLoop[ObjectIdentifier(session.socket.outbox), default: (session.socket.outbox, [])].sockets.append(session.socket)
            } else {
                others.append((connection, session))
            }
        }
        return RoomAudience(loops: Array(byLoop.values), steady: sessions.count - others.count, others: others)
    }
}

/// A room's audience for room-wide events (`LocalRoom.audience`).
struct RoomAudience {
    let loops: [(outbox: LoopOutbox, sockets: [ClientSocket])]
    /// The sockets in `loops`, all loops together.
    let steady: Int
    let others: [(connection: UInt64, session: LocalSession)]
}

/// One connection's session in one room.
struct LocalSession {
    let userId: String
    let sessionId: String
    /// Where the session's frames go (its connection's).
    let socket: ClientSocket
    /// While the enter (and a resume's replay) is in flight, events wait here so the answer and the replayed
    /// items reach the client first.
    var buffering = true
    var buffer: [(seq: UInt64, frame: TextFrame, kicked: Bool)] = []
    /// Room-wide events at or below this seq happened before the session (or were replayed); they are skipped.
    var floor: UInt64 = 0
    /// An exit is in flight: events addressed to the session wait for the exit's answer, which carries them
    /// (so the feed and the answer never both deliver its `status: quit`).
    var exiting = false
}

/// One connection's state on the edge. What the connection's event loop also reads (hello, closing, account,
/// rooms, request bucket) lives in its `ConnectionSessions`, shared with that loop (issue 35 item 3).
struct ClientConnection {
    let number: UInt64
    let sessionId: String
    let socket: ClientSocket
    /// The client's IP address (login throttling).
    var remoteHost = "?"
    var shared: ConnectionSessions { socket.sessions }
    var helloDone: Bool {
        get { shared.read(\.helloDone) }
        nonmutating set { shared.change { $0.helloDone = newValue } }
    }
    var closing: Bool {
        get { shared.read(\.closing) }
        nonmutating set { shared.change { $0.closing = newValue } }
    }
    /// Set by the first successful enter; every later enter must use the same account and mode (4013).
    var account: (userId: String, mode: AuthMode, appKey: String)? {
        get { shared.read(\.account) }
        nonmutating set { shared.change { $0.account = newValue } }
    }
    /// Rooms entered or being entered.
    var rooms: Set<String> {
        get { shared.read(\.rooms) }
        nonmutating set { shared.change { $0.rooms = newValue } }
    }
    /// Rooms whose E3 slot (on the user's home shard) this connection holds.
    var slots: Set<String> = []
    /// C5: when this draining edge told the client to move (its sessions then end late, in silence).
    var handedOffAt: ContinuousClock.Instant?
    /// Issue 19: the connection's IM login (`imLogin`), once it succeeded.
    var im: ImLogin? {
        didSet {
            guard im?.scoped != oldValue?.scoped || im?.appKey != oldValue?.appKey else { return }
            shared.change { $0.im = im.map { ($0.appKey, $0.account, $0.scoped, $0.namespace) } }
        }
    }

    init(number: UInt64, sessionId: String, socket: ClientSocket) {
        self.number = number
        self.sessionId = sessionId
        self.socket = socket
    }

    func send(_ text: String) {
        socket.send(TextFrame(text))
    }

    func send(_ frame: TextFrame) {
        socket.send(frame)
    }
}

/// Issue 19: who a connection is logged in as for IM, and where that user's IM state lives.
struct ImLogin {
    let appKey: String
    /// As the app knows it (answers and events).
    let account: String
    /// In the app's namespace (the cluster's key).
    let scoped: String
    let namespace: String
    /// The shard of the user's IM state, whose feed carries the user's events.
    let shard: ShardID
    /// The user's teams (app-scoped) and their shards, whose feeds carry the teams' messages and notifications.
    var teams: [String: ShardID] = [:]
    /// Issue 38: what the edge knows of the user's membership of each team it follows — what a supergroup's
    /// events, which do not name the team's members, are delivered by.
    var checks: [String: TeamFollowCheck] = [:]

    /// Who the connection's IM commands come from.
    func identity(of c: ClientConnection, edgeId: String) -> SessionIdentity {
        SessionIdentity(userId: scoped, authMode: .imSession, sessionId: c.sessionId, edgeId: edgeId)
    }
}
