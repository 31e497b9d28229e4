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
    /// Takes the apps' settings from `state`, a meta state read once this node's meta replica caught up: what
    /// `copyKinds` answers is otherwise refreshed every 2 s, and a shard leader asks for this before it narrows a
    /// box on the poster's word.
    func readSettings(from state: MetaState)
    /// Posts `copies` (oldest first) to the app of `namespace`; succeeds once its app server answered 2xx.
    /// Completes on `eventLoop`.
    func post(_ copies: [WebhookCopy], namespace: String, shard: ShardID, eventLoop: EventLoop) -> EventLoopFuture<Void>
    /// W4: `count` copies of the app of `namespace` were dropped unsent, `why` (counted, logged rate-limited).
    func dropped(namespace: String, count: Int, why: String)
    /// W5: what waits for the app of `namespace` on the shards this driver leads, by shard: how many copies,
    /// and the oldest one's age (ms). Once per app and tick.
    func backlog(namespace: String, byShard: [ShardID: (pending: Int, oldestMillis: Int64)])
}

/// What the after-event copies of this driver's shard leaders are doing, per app and shard, and the
/// subscriptions being proposed.
final class WebhookCopyBook {
    struct Key: Hashable {
        var shard: ShardID
        var namespace: String
    }

    struct Progress {
        /// The last event the app server took that may still be in the box (its trim not yet applied).
        var sent: WebhookPosition?
        var calling = false
        /// When the trim in flight was proposed (nil: none).
        var trimming: NIODeadline?
        var trimmedAt = NIODeadline.uptimeNanoseconds(0)
        var failures = 0
        var retryAt: NIODeadline?

        /// No trim in flight, or one that never answered (a proposal lost with a leadership): trims are
        /// idempotent, so another may go.
        func mayTrim(now: NIODeadline) -> Bool {
            trimming.map { now - $0 > .seconds(5) } ?? true
        }

        mutating func trimmed() {
            trimming = nil
            trimmedAt = .now()
        }

        mutating func delivered(through position: WebhookPosition) {
            calling = false
            sent = max(sent ?? position, position)
            failures = 0
            retryAt = nil
        }

        mutating func failed(now: NIODeadline) {
            calling = false
            failures += 1
            retryAt = now + WebhookCopyBook.backOff(after: failures)
        }
    }

    var progress: [Key: Progress] = [:]
    var subscribing = Set<Key>()
    /// When each box's narrowing last waited for a caught-up view of the app's settings: at most once a second.
    var narrowingChecked: [Key: NIODeadline] = [:]
    /// Whether every node reads the outbox (shard command 201).
    let outboxReaders = PeerFeatureWatch(.webhookCopies)

    /// W4: the back-off after `failures` failed calls in a row: 0.5 s doubling to 30 s.
    static func backOff(after failures: Int) -> TimeAmount {
        .milliseconds(min(30_000, 500 << min(failures - 1, 6)))
    }
}
