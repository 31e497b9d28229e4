import Foundation
import Metrics
import ParleyAPI
import ParleyCluster
import ParleyPlacement
import Synchronization

/// SPEC W5: what this node's calls to app servers did, per app — on `/metrics` and `/status`.
///
/// `/metrics` names:
/// - `parley_webhook_presend_calls_total{app, outcome}`: pre-send checks (W3) by how they ended: `allowed`,
///   `rejected`, `replaced` (the app server's verdict) or `failed` (an error, a bad answer or the timeout; the
///   app's `onFailure` policy then applied).
/// - `parley_webhook_presend_seconds{app}`: from the call's start to its verdict or failure (histogram).
/// - `parley_webhook_event_calls_total{app, outcome}`: after-event calls (W2), `delivered` (2xx) or `failed`
///   (retried after a back-off).
/// - `parley_webhook_events_total{app, outcome}`: after-events `delivered` or `dropped` unsent (W4).
/// - `parley_webhook_event_seconds{app}`: an after-event call's duration (histogram).
/// - `parley_webhook_backlog_events{app}` and `parley_webhook_backlog_oldest_seconds{app}`: events waiting on
///   the shards this node leads, and the oldest one's age.
final class WebhookFigures: Sendable {
    enum Outcome: String, CaseIterable {
        case allowed, rejected, replaced, failed
    }

    /// The last (up to) 256 durations (ms), oldest overwritten first.
    private struct Recent {
        var values: [Double] = []
        var next = 0

        mutating func add(_ millis: Double) {
            if values.count < WebhookFigures.recentCalls { values.append(millis) } else { values[next] = millis }
            next = (next + 1) % WebhookFigures.recentCalls
        }

        var median: Double? { values.isEmpty ? nil : values.sorted()[values.count / 2] }
    }

    private struct Backlog {
        var pending: Int
        var oldestMillis: Int64
        var at: ContinuousClock.Instant
    }

    private struct Tally {
        var counts: [Outcome: Int] = [:]
        var recent = Recent()
        var lastFailure: (why: String, at: ContinuousClock.Instant)?
        var counters: [Outcome: Counter]
        var timer: Metrics.Timer
        // After-event callbacks (W2).
        var copyCalls = 0
        var copyCallsFailed = 0
        var copiesDelivered = 0
        var copiesDropped = 0
        var copyRecent = Recent()
        var backlog: [ShardID: Backlog] = [:]
        var copyMetrics: CopyMetrics
    }

    private struct CopyMetrics {
        var callsDelivered: Counter
        var callsFailed: Counter
        var delivered: Counter
        var dropped: Counter
        var timer: Metrics.Timer
        var backlog: Gauge
        var oldest: Gauge
    }

    static let recentCalls = 256
    /// A shard's backlog counts while its leader reported it this recently (a lost leadership stops reporting).
    static let backlogFreshFor = Duration.seconds(5)
    private let factory: (any MetricsFactory)?
    private let tallies = Mutex<[String: Tally]>([:])

    init(factory: (any MetricsFactory)?) {
        self.factory = factory
    }

    /// One finished call of `app`'s pre-send check.
    func record(app: String, _ outcome: Outcome, took: Duration, failure: String? = nil) {
        let (counter, timer) = tallies.withLock { all -> (Counter, Metrics.Timer) in
            var tally = all[app] ?? makeTally(app)
            tally.counts[outcome, default: 0] += 1
            tally.recent.add(Self.millis(took))
            if let failure { tally.lastFailure = (String(failure.prefix(200)), .now) }
            all[app] = tally
            return (tally.counters[outcome]!, tally.timer)
        }
        counter.increment()
        timer.recordNanoseconds(Int64(took / .nanoseconds(1)))
    }

    /// One finished after-event call of `app` that delivered `delivered` events (0: it failed, `failure` says why).
    func recordCopies(app: String, delivered: Int, took: Duration, failure: String? = nil) {
        let metrics = tallies.withLock { all -> CopyMetrics in
            var tally = all[app] ?? makeTally(app)
            tally.copyCalls += 1
            if failure != nil { tally.copyCallsFailed += 1 }
            tally.copiesDelivered += delivered
            tally.copyRecent.add(Self.millis(took))
            if let failure { tally.lastFailure = (String(failure.prefix(200)), .now) }
            all[app] = tally
            return tally.copyMetrics
        }
        (failure == nil ? metrics.callsDelivered : metrics.callsFailed).increment()
        if delivered > 0 { metrics.delivered.increment(by: delivered) }
        metrics.timer.recordNanoseconds(Int64(took / .nanoseconds(1)))
    }

    func recordDropped(app: String, count: Int) {
        let metrics = tallies.withLock { all -> CopyMetrics in
            var tally = all[app] ?? makeTally(app)
            tally.copiesDropped += count
            all[app] = tally
            return tally.copyMetrics
        }
        metrics.dropped.increment(by: count)
    }

    /// What waits for `app` on the shards one Raft loop leads (once per app and tick).
    func recordBacklog(app: String, byShard: [ShardID: (pending: Int, oldestMillis: Int64)]) {
        let (metrics, total, oldest) = tallies.withLock { all -> (CopyMetrics, Int, Int64) in
            var tally = all[app] ?? makeTally(app)
            let now = ContinuousClock.now
            for (shard, b) in byShard { tally.backlog[shard] = Backlog(pending: b.pending, oldestMillis: b.oldestMillis, at: now) }
            all[app] = tally
            let (total, oldest) = Self.fresh(tally.backlog)
            return (tally.copyMetrics, total, oldest)
        }
        metrics.backlog.record(total)
        metrics.oldest.record(Double(oldest) / 1000)
    }

    private static func fresh(_ backlog: [ShardID: Backlog]) -> (pending: Int, oldestMillis: Int64) {
        let now = ContinuousClock.now
        var total = 0
        var oldest: Int64 = 0
        for b in backlog.values where b.at.duration(to: now) < backlogFreshFor {
            total += b.pending
            oldest = max(oldest, b.oldestMillis)
        }
        return (total, oldest)
    }

    private static func millis(_ d: Duration) -> Double { Double(d / .microseconds(1)) / 1000 }

    private func makeTally(_ app: String) -> Tally {
        let factory = self.factory ?? NOOPMetricsHandler.instance
        var counters: [Outcome: Counter] = [:]
        for outcome in Outcome.allCases {
            counters[outcome] = Counter(label: "parley_webhook_presend_calls_total",
                                        dimensions: [("app", app), ("outcome", outcome.rawValue)], factory: factory)
        }
        let copyMetrics = CopyMetrics(
            callsDelivered: Counter(label: "parley_webhook_event_calls_total", dimensions: [("app", app), ("outcome", "delivered")], factory: factory),
            callsFailed: Counter(label: "parley_webhook_event_calls_total", dimensions: [("app", app), ("outcome", "failed")], factory: factory),
            delivered: Counter(label: "parley_webhook_events_total", dimensions: [("app", app), ("outcome", "delivered")], factory: factory),
            dropped: Counter(label: "parley_webhook_events_total", dimensions: [("app", app), ("outcome", "dropped")], factory: factory),
            timer: Metrics.Timer(label: "parley_webhook_event_seconds", dimensions: [("app", app)], factory: factory),
            backlog: Gauge(label: "parley_webhook_backlog_events", dimensions: [("app", app)], factory: factory),
            oldest: Gauge(label: "parley_webhook_backlog_oldest_seconds", dimensions: [("app", app)], factory: factory))
        return Tally(counters: counters,
                     timer: Metrics.Timer(label: "parley_webhook_presend_seconds", dimensions: [("app", app)], factory: factory),
                     copyMetrics: copyMetrics)
    }

    /// The figures for `/status`, apps in name order.
    var report: [NodeStatusReport.Webhooks] {
        tallies.withLock { all in
            all.keys.sorted().map { app in
                let t = all[app]!
                let (backlog, oldest) = Self.fresh(t.backlog)
                let afterEvents = t.copyCalls == 0 && t.copiesDropped == 0 && backlog == 0 ? nil
                    : NodeStatusReport.Webhooks.AfterEvents(
                        calls: t.copyCalls, failedCalls: t.copyCallsFailed, delivered: t.copiesDelivered,
                        dropped: t.copiesDropped, backlog: backlog, oldestBacklogSeconds: Double(oldest) / 1000,
                        callMillisP50: t.copyRecent.median, callMillisMax: t.copyRecent.values.max())
                return NodeStatusReport.Webhooks(
                    app: app, preSendCalls: t.counts.values.reduce(0, +), allowed: t.counts[.allowed] ?? 0,
                    rejected: t.counts[.rejected] ?? 0, replaced: t.counts[.replaced] ?? 0, failed: t.counts[.failed] ?? 0,
                    callMillisP50: t.recent.median, callMillisMax: t.recent.values.max(),
                    lastFailure: t.lastFailure?.why,
                    lastFailureSecondsAgo: t.lastFailure.map { NodeRuntime.rounded(Double($0.at.duration(to: .now) / .milliseconds(1)) / 1000) },
                    afterEvents: afterEvents)
            }
        }
    }
}
