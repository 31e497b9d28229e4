import NIOCore
import ParleyPlacement
import ParleyShardState

/// SPEC W2: where a shard leader sends its apps' after-event copies — the node's webhook caller. The leader
/// decides what to send and when (oldest first, one batch per app and shard at a time); the poster knows the
/// apps' settings and secrets, renders and signs the call.
public protocol WebhookCopyPoster: Sendable {
    /// The kinds each app with webhooks on wants, by the namespace of its rooms (`AppScope`); nil until the node
    /// read the apps' settings. Cheap: asked at the tick's pace.
    func copyKinds() -> [String: WebhookCopyKinds]?
    /// Posts `copies` (oldest first) to the app of `namespace`; succeeds once its app server answered 2xx.
    /// Completes on `eventLoop`.
    func post(_ copies: [WebhookCopy], namespace: String, shard: ShardID, eventLoop: EventLoop) -> EventLoopFuture<Void>
    /// W4: `count` copies of the app of `namespace` were dropped unsent, `why` (counted, logged rate-limited).
    func dropped(namespace: String, count: Int, why: String)
    /// W5: the app of `namespace` has `pending` copies waiting on `shard`, the oldest `oldestMillis` old.
    func backlog(namespace: String, shard: ShardID, pending: Int, oldestMillis: Int64)
}

/// What the after-event copies of this driver's shard leaders are doing: the boxes with a call in flight, when
/// a failed one may try again, and the subscriptions being proposed.
final class WebhookCopyBook {
    struct Key: Hashable {
        var shard: ShardID
        var namespace: String
    }

    var inFlight = Set<Key>()
    var failures: [Key: Int] = [:]
    var retryAt: [Key: NIODeadline] = [:]
    var subscribing = Set<Key>()
    /// Every node of the registry reads the outbox (asked again every few seconds until it does).
    var everyNodeReads = false
    var askedAt: NIODeadline?

    /// W4: the back-off after `failures` failed calls in a row: 0.5 s doubling to 30 s.
    static func backOff(after failures: Int) -> TimeAmount {
        .milliseconds(min(30_000, 500 << min(failures - 1, 6)))
    }

    func failed(_ key: Key, now: NIODeadline) {
        inFlight.remove(key)
        let n = (failures[key] ?? 0) + 1
        failures[key] = n
        retryAt[key] = now + Self.backOff(after: n)
    }

    func succeeded(_ key: Key) {
        inFlight.remove(key)
        failures[key] = nil
        retryAt[key] = nil
    }
}
