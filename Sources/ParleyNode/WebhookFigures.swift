import Foundation
import Metrics
import ParleyAPI
import ParleyCluster
import Synchronization

/// SPEC W5: what this node's calls to app servers did, per app — on `/metrics` and `/status`.
///
/// `/metrics` names:
/// - `parley_webhook_presend_calls_total{app, outcome}`: pre-send checks (W3) by how they ended: `allowed`,
///   `rejected`, `replaced` (the app server's verdict) or `failed` (an error, a bad answer or the timeout; the
///   app's `onFailure` policy then applied).
/// - `parley_webhook_presend_seconds{app}`: from the call's start to its verdict or failure (histogram).
final class WebhookFigures: Sendable {
    enum Outcome: String, CaseIterable {
        case allowed, rejected, replaced, failed
    }

    private struct Tally {
        var counts: [Outcome: Int] = [:]
        /// The last 256 calls' durations (ms), oldest overwritten first.
        var recent: [Double] = []
        var next = 0
        var lastFailure: (why: String, at: ContinuousClock.Instant)?
        var counters: [Outcome: Counter]
        var timer: Metrics.Timer
    }

    static let recentCalls = 256
    private let factory: (any MetricsFactory)?
    private let tallies = Mutex<[String: Tally]>([:])

    init(factory: (any MetricsFactory)?) {
        self.factory = factory
    }

    /// One finished call of `app`'s pre-send check.
    func record(app: String, _ outcome: Outcome, took: Duration, failure: String? = nil) {
        let millis = Double(took / .microseconds(1)) / 1000
        let (counter, timer) = tallies.withLock { all -> (Counter, Metrics.Timer) in
            var tally = all[app] ?? makeTally(app)
            tally.counts[outcome, default: 0] += 1
            if tally.recent.count < Self.recentCalls {
                tally.recent.append(millis)
            } else {
                tally.recent[tally.next] = millis
            }
            tally.next = (tally.next + 1) % Self.recentCalls
            if let failure { tally.lastFailure = (String(failure.prefix(200)), .now) }
            all[app] = tally
            return (tally.counters[outcome]!, tally.timer)
        }
        counter.increment()
        timer.recordNanoseconds(Int64(took / .nanoseconds(1)))
    }

    private func makeTally(_ app: String) -> Tally {
        let factory = self.factory ?? NOOPMetricsHandler.instance
        var counters: [Outcome: Counter] = [:]
        for outcome in Outcome.allCases {
            counters[outcome] = Counter(label: "parley_webhook_presend_calls_total",
                                        dimensions: [("app", app), ("outcome", outcome.rawValue)], factory: factory)
        }
        return Tally(counters: counters,
                     timer: Metrics.Timer(label: "parley_webhook_presend_seconds", dimensions: [("app", app)], factory: factory))
    }

    /// The figures for `/status`, apps in name order.
    var report: [NodeStatusReport.Webhooks] {
        tallies.withLock { all in
            all.keys.sorted().map { app in
                let t = all[app]!
                let sorted = t.recent.sorted()
                return NodeStatusReport.Webhooks(
                    app: app, preSendCalls: t.counts.values.reduce(0, +), allowed: t.counts[.allowed] ?? 0,
                    rejected: t.counts[.rejected] ?? 0, replaced: t.counts[.replaced] ?? 0, failed: t.counts[.failed] ?? 0,
                    callMillisP50: sorted.isEmpty ? nil : sorted[sorted.count / 2], callMillisMax: sorted.last,
                    lastFailure: t.lastFailure?.why,
                    lastFailureSecondsAgo: t.lastFailure.map { NodeRuntime.rounded(Double($0.at.duration(to: .now) / .milliseconds(1)) / 1000) })
            }
        }
    }
}
