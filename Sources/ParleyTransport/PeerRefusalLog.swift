import Logging
import Metrics
import NIOCore

/// Says that the peer port refused credentials: `parley_peer_auth_failures_total{reason}` for each, and a
/// warning (`refused peer credentials`) at most once per 10 s with how many were refused since the last
/// one, the last reason and where it came from.
final class PeerRefusalLog: Sendable {
    private let counters: [PeerTokenCheck.Refusal: Counter]
    private let warning: RateLimitedWarning

    static let metric = "parley_peer_auth_failures_total"

    init(logger: Logger, metrics: any MetricsFactory) {
        warning = RateLimitedWarning(logger: logger, message: "refused peer credentials")
        var counters: [PeerTokenCheck.Refusal: Counter] = [:]
        for reason in [PeerTokenCheck.Refusal.missing, .badToken, .stale, .replayed, .full] {
            counters[reason] = Counter(label: Self.metric, dimensions: [("reason", reason.rawValue)], factory: metrics)
        }
        self.counters = counters
    }

    func refused(_ why: PeerTokenCheck.Refusal, from remote: SocketAddress?) {
        counters[why]?.increment()
        warning.happened(["reason": "\(why.rawValue)", "from": "\(remote.map { "\($0)" } ?? "?")"])
    }
}
