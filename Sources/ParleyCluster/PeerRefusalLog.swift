import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore

/// Says that the peer port refused credentials: `parley_peer_auth_failures_total{reason}` for each, and a
/// warning at most once per `period` with how many were refused since the last one, the last reason and
/// where it came from — so a replayed or forged token is seen, and a flood of them costs no log storm.
final class PeerRefusalLog: Sendable {
    private let logger: Logger
    private let counters: [PeerTokenCheck.Refusal: Counter]
    private let period: TimeAmount
    private let state = NIOLockedValueBox<(count: Int, lastLog: NIODeadline?)>((0, nil))

    static let metric = "parley_peer_auth_failures_total"

    init(logger: Logger, metrics: any MetricsFactory, period: TimeAmount = .seconds(10)) {
        self.logger = logger
        self.period = period
        var counters: [PeerTokenCheck.Refusal: Counter] = [:]
        for reason in [PeerTokenCheck.Refusal.missing, .badToken, .stale, .replayed, .full] {
            counters[reason] = Counter(label: Self.metric, dimensions: [("reason", reason.rawValue)], factory: metrics)
        }
        self.counters = counters
    }

    func refused(_ why: PeerTokenCheck.Refusal, from remote: SocketAddress?) {
        counters[why]?.increment()
        let now = NIODeadline.now()
        let count: Int? = state.withLockedValue { s in
            s.count += 1
            if let last = s.lastLog, now - last < period { return nil }
            defer { s = (0, now) }
            return s.count
        }
        guard let count else { return }
        logger.warning("refused peer credentials", metadata: [
            "reason": "\(why.rawValue)", "from": "\(remote.map { "\($0)" } ?? "?")", "refusedSinceLastLine": "\(count)",
        ])
    }
}
