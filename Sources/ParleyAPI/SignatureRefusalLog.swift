import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore

/// Says that the server API refused a signature (issue 24): `parley_api_auth_failures_total{code}` for each
/// (10401 missing, 10402 unknown AppKey, 10403 bad checksum, 10405 stale CurTime, 10406 reused Nonce, 10407
/// CheckSum2 required), and a warning at most once per `period` with how many were refused since the last
/// one, the last code, app key and path — so a replay or a guesser is seen without a log storm.
final class SignatureRefusalLog: Sendable {
    static let metric = "parley_api_auth_failures_total"
    static let codes: [APIErrorCode] = [.missingSignature, .unknownAppKey, .badChecksum, .staleCurTime, .reusedNonce,
                                        .signedBodyRequired]

    private let logger: Logger
    private let counters: [Int: Counter]
    private let period: TimeAmount
    private let state = NIOLockedValueBox<(count: Int, lastLog: NIODeadline?)>((0, nil))

    init(logger: Logger, metrics: any MetricsFactory, period: TimeAmount = .seconds(10)) {
        self.logger = logger
        self.period = period
        var counters: [Int: Counter] = [:]
        for code in Self.codes {
            counters[code.rawValue] = Counter(label: Self.metric, dimensions: [("code", "\(code.rawValue)")], factory: metrics)
        }
        self.counters = counters
    }

    /// Records `error` if it is a signature refusal; other refusals are not this log's.
    func record(_ error: APIError, appKey: String?, path: String) {
        guard let counter = counters[error.code] else { return }
        counter.increment()
        let now = NIODeadline.now()
        let count: Int? = state.withLockedValue { s in
            s.count += 1
            if let last = s.lastLog, now - last < period { return nil }
            defer { s = (0, now) }
            return s.count
        }
        guard let count else { return }
        logger.warning("refused server-API signatures", metadata: [
            "code": "\(error.code)", "appKey": "\(appKey ?? "-")", "path": "\(path)", "refusedSinceLastLine": "\(count)",
        ])
    }
}
