import NIOCore
import ParleyPlacement

/// The numbers the edge announces in `hello` and enforces (docs/protocol.md).
public struct EdgeSettings: Sendable, Hashable {
    /// The app whose rooms live in the empty namespace (`AppScope`): rooms made before apps were tenants.
    public var legacyRoomsApp: String?
    public var heartbeatMillis: Int = 25_000
    /// A connection that sends nothing for this long is closed (1001) and its sessions end.
    public var idleTimeoutMillis: Int = 75_000
    /// Largest message (after reassembly of fragments) a client may send.
    public var maxFrameBytes: Int = 65_536
    /// SPEC A9: before its `hello` is accepted a connection may send (or hold unfinished) a message of at
    /// most this many bytes, and it must send `hello` within `helloDeadlineMillis` (else 4002, close 1008).
    public var preHelloMessageBytes: Int = 4096
    /// Issue 33 (SPEC A9 after hello): a message sent in fragments may total at most this many bytes, and must
    /// be finished within `messageMillis` of its first fragment (else 4006, close 1008). A larger message is
    /// sent in one frame (as WebSocket libraries do), which `frameMillis` bounds. So a connection cannot hold
    /// a 64 KiB unfinished message for ever with a byte of continuation now and then.
    public var fragmentedMessageBytes: Int = 8192
    public var messageMillis: Int = 10_000
    /// SPEC A9 / X2: the most history items a resume (`enter` with `lastSeq`) replays; a wider gap is
    /// answered `gapTooOld` with the newest this many, and the client pages history for the rest.
    public var maxResumeEvents: Int = 100
    public var helloDeadlineMillis: Int = 10_000
    /// SPEC A2: a WebSocket frame must arrive whole within this many ms of its first byte, else close 1008
    /// (`FrameDeadline`): a legitimate 64 KiB message needs 6.5 KB/s for it.
    public var frameMillis: Int = 10_000
    /// How long one event-feed poll waits at the replica for new events.
    public var pollWaitMillis: Int = 5_000
    /// Items per `historySince` page when filling a gap or resuming.
    public var historyPageLimit: Int = 100
    /// Pause after a failed poll before the next (the shard may be electing a leader).
    public var pollRetryMillis: Int = 200
    /// Issue 35 item 3: the least time between two writes of room events to one event loop's connections. An
    /// event that comes after a quiet moment goes out at once; under a burst the events of this many ms go
    /// to each connection in one flush (one system call) instead of one each, which is most of a delivery's
    /// cost (docs/benchmarks.md: 20 ms took a fifth off the fan-out's CPU per delivery, 50 ms a third). Answers
    /// are never held, and one that leaves takes the events queued before it along. 0 writes every page at once.
    public var deliverySpacingMillis: Int = 20
    /// Bytes written to one connection but not yet taken by its socket beyond which it counts as too slow: it is
    /// sent close 1008 and dropped (SPEC D2; past half of it, low-priority events are skipped first). Bounds the
    /// memory a client that stops reading holds.
    public var maxQueuedBytes = 1 << 20
    /// SPEC A1: requests one connection may send, all ops together, when its app has no budget of its own
    /// (`/v1/app/setBudgets`, `ConnectionBudget`); beyond it the request is answered 416 with `retryAfterMs`
    /// and not run. Messages have their own, tighter budgets per user and per room (`SendBudget`, at the
    /// shard leader).
    public var requestBudget = ConnectionBudget.standard
    /// SPEC A2: an HTTP connection must finish its first request head within this many ms of opening, and
    /// each later one (a keep-alive connection's next request) within `keepAliveMillis` of the previous
    /// head; otherwise it is closed (`RequestHeadDeadline`).
    public var requestHeadMillis: Int = 10_000
    public var keepAliveMillis: Int = 30_000
    /// SPEC A2: client-port connections this node holds at most, in all and from one remote address (a
    /// carrier NAT puts many phones behind one address: keep the second generous). Size the process's
    /// descriptor limit above `maxConnections` plus the peer links and the database (docs/operations.md).
    public var maxConnections: Int = 15_000
    public var maxConnectionsPerAddress: Int = 2_000
    /// C5, draining: connections told to move to other edges per second (so the others are not stampeded),
    /// how long one may take to move before it is closed with 4100, and how long the sessions of a connection
    /// that moved wait before their exits are proposed (a client that re-entered elsewhere replaced them, and
    /// those exits change nothing; one that did not leaves with a 302 then).
    public var handOffsPerSecond: Int = 200
    public var handOffDeadlineMillis: Int = 10_000
    public var handOffGraceMillis: Int = 15_000
    /// Serve `/ws/echo` (the Autobahn conformance cases need an echo peer); off on production nodes.
    public var servesEcho = false

    public init() {}

    /// The protocol versions this edge speaks.
    public static let versions: [Int64] = [1]
}
