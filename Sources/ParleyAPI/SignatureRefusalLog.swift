import Logging
import Metrics
import ParleyCluster
import ParleyTransport

/// Says that the server API refused a signature (issue 24): `parley_api_auth_failures_total{code}` for each
/// (10401 missing, 10402 unknown AppKey, 10403 bad checksum, 10405 stale CurTime, 10406 reused Nonce, 10407
/// CheckSum2 required, 10429 too many unverified body bytes or live nonces), and a warning (`refused
/// server-API signatures`) at most once per 10 s with how many were refused since the last one, the last
/// code, app key and path.
final class SignatureRefusalLog: Sendable {
    static let metric = "parley_api_auth_failures_total"
    static let codes: [APIErrorCode] = [.missingSignature, .unknownAppKey, .badChecksum, .staleCurTime, .reusedNonce,
                                        .signedBodyRequired, .tooManyRequests]

    private let counters: [Int: Counter]
    private let warning: RateLimitedWarning

    init(logger: Logger, metrics: any MetricsFactory) {
        warning = RateLimitedWarning(logger: logger, message: "refused server-API signatures")
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
        warning.happened(["code": "\(error.code)", "appKey": "\(appKey ?? "-")", "path": "\(path)"])
    }
}
