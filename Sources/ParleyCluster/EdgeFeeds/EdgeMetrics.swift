import Metrics

/// The edge's figures on `/metrics`, created once per node so the edge (client WebSocket sessions and
/// fan-out) only increments them. Names:
/// - `parley_edge_connections`: open client WebSocket connections on this node (gauge).
/// - `parley_edge_sessions`: authenticated sessions on this node (gauge).
/// - `parley_edge_fanout_deliveries_total`: room events written to local sessions (one per session per event).
/// - `parley_edge_fanout_events_total`: room events this edge received to fan out (one per event).
/// - `parley_edge_requests_over_budget_total`: client requests refused 416 by the per-connection budget (A1).
/// - `parley_edge_connections_refused_total`: client-port connections refused 503 by the caps (A2).
/// - `parley_edge_closes_total{reason}`: WebSockets the edge dropped without waiting for a close handshake:
///   `tooSlow` (the client stopped reading: `maxQueuedBytes` unsent), `frameTooSlow` (a frame not whole within
///   `frameMillis`, A2), `error` (the connection's pipeline failed: a reset, a write error; logged).
/// - `parley_edge_request_seconds`: from a room request (enter, send, any room op) read to its answer written
///   (histogram, issue 18).
/// - `parley_edge_messages_total`: messages clients sent through this edge that their room took.
/// - `parley_edge_feed_polls_total{replica}`: polls of shards' event feeds this edge made: `here` (one shard of
///   this node's own replica, issue 35), `batched` (several shards of this node's own replicas on one Raft loop
///   in one poll, issue 35) or `peer` (another node's).
/// - `parley_edge_shed_total{reason}`: room messages this edge did not deliver (SPEC D2, D3): `rate` (one per
///   message above its room's ceiling, whoever was in the room), `slow` (one per low-priority event a
///   connection that was behind skipped).
public final class EdgeMetrics: Sendable {
    /// `increment()` when a connection opens, `decrement()` when it closes.
    public let connections: Meter
    /// `increment()` when a session authenticates, `decrement()` when it ends.
    public let sessions: Meter
    /// `increment(by: sessionsWritten)` per fanned-out event.
    public let fanoutDeliveries: Counter
    public let fanoutEvents: Counter
    public let requestsOverBudget: Counter
    public let connectionsRefused: Counter
    public let requestTime: Metrics.Timer
    public let messages: Counter
    /// `parley_edge_feed_polls_total{replica="here"}` and `{replica="peer"}`.
    public let feedPollsHere: Counter
    public let feedPollsPeer: Counter
    public let feedPollsBatched: Counter
    /// The same answers for the node's history of the last minutes (`EdgeRequestWindow`).
    public let window = EdgeRequestWindow()
    public static let requestTimeName = "parley_edge_request_seconds"
    /// `parley_edge_auth_failures_total{reason}`: refused logins (badToken, tokenExpired, tokenRevoked,
    /// unknownApp, throttled).
    private let authFailures: [String: Counter]
    private let closes: [String: Counter]
    public static let closeReasons = ["tooSlow", "frameTooSlow", "error"]
    private let shedCounters: [String: Counter]
    public static let shedReasons = ["rate", "slow"]
    public static let authFailureReasons = ["badToken", "tokenExpired", "tokenRevoked", "unknownApp", "throttled"]

    public init(factory: any MetricsFactory) {
        connections = Meter(label: "parley_edge_connections", factory: factory)
        sessions = Meter(label: "parley_edge_sessions", factory: factory)
        fanoutDeliveries = Counter(label: "parley_edge_fanout_deliveries_total", factory: factory)
        fanoutEvents = Counter(label: "parley_edge_fanout_events_total", factory: factory)
        requestsOverBudget = Counter(label: "parley_edge_requests_over_budget_total", factory: factory)
        connectionsRefused = Counter(label: "parley_edge_connections_refused_total", factory: factory)
        requestTime = Metrics.Timer(label: Self.requestTimeName, factory: factory)
        messages = Counter(label: "parley_edge_messages_total", factory: factory)
        feedPollsHere = Counter(label: "parley_edge_feed_polls_total", dimensions: [("replica", "here")], factory: factory)
        feedPollsPeer = Counter(label: "parley_edge_feed_polls_total", dimensions: [("replica", "peer")], factory: factory)
        feedPollsBatched = Counter(label: "parley_edge_feed_polls_total", dimensions: [("replica", "batched")],
                                   factory: factory)
        var failures: [String: Counter] = [:]
        for reason in Self.authFailureReasons {
            failures[reason] = Counter(label: "parley_edge_auth_failures_total", dimensions: [("reason", reason)], factory: factory)
        }
        authFailures = failures
        closes = Dictionary(uniqueKeysWithValues: Self.closeReasons.map {
            ($0, Counter(label: "parley_edge_closes_total", dimensions: [("reason", $0)], factory: factory))
        })
        shedCounters = Dictionary(uniqueKeysWithValues: Self.shedReasons.map {
            ($0, Counter(label: "parley_edge_shed_total", dimensions: [("reason", $0)], factory: factory))
        })
    }

    /// D2 / D3: a message not delivered (`reason` one of `shedReasons`).
    public func shed(_ reason: String) {
        shedCounters[reason]?.increment()
    }

    /// A room request answered `since` then; `message`: a message its room took.
    public func answered(since start: ContinuousClock.Instant, message: Bool) {
        let took = ContinuousClock.now - start
        requestTime.recordNanoseconds(Int64(took / .nanoseconds(1)))
        window.record(millis: took / .milliseconds(1), message: message)
        if message { messages.increment() }
    }

    public func closed(_ reason: String) {
        closes[reason]?.increment()
    }

    public func authFailed(_ reason: String) {
        authFailures[reason]?.increment()
    }
}
