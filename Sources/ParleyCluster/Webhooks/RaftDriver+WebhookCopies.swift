import NIOCore
import ParleyPlacement
import ParleyShardState

/// SPEC W2 / W4 (docs/webhooks.md, "After-event callbacks"): each shard's leader delivers its apps' boxes. Per
/// app and shard one call at a time, oldest first; after a 2xx the next call starts after the last event sent.
/// What the app server took leaves the box by a replicated `trim`, proposed at most every
/// `webhookTrimInterval` (or sooner once `webhookTrimAfter` events wait for it) rather than after every call:
/// a quiet room's message would otherwise cost a second entry (measured: 0.87x writes/s at one writer). A
/// leader change, a crash or a timeout leaves the box as the log has it, and whoever leads next calls again
/// from there: every event is delivered at least once, in log order (so in order per room), and the app server
/// drops a repeat by its id — at most the events of one trim interval come twice. A failing app server is
/// called again after a back-off (0.5 s doubling to 30 s); copies older than `webhookCopyMaxAgeMillis` are
/// dropped unsent, counted.
extension RaftDriver {
    /// Copies per call.
    static let webhookBatch = 100
    static let webhookTrimInterval = TimeAmount.milliseconds(250)
    static let webhookTrimAfter = 1_000

    func deliverWebhookCopies() {
        loop.preconditionInEventLoop()
        guard let poster = webhookCopies else { return }
        let now = NIODeadline.now()
        // Shard leaders keep copies once every node reads the outbox (a rolling upgrade: until then no box).
        refresh(webhookBook.outboxReaders, now: now)
        // Nil until the node read its apps' settings: a box is never dropped for a setting not yet known.
        let wanted = poster.copyKinds()
        let wallNow = Self.now()
        var backlogs: [String: [ShardID: (pending: Int, oldestMillis: Int64)]] = [:]
        for shard in host.shards {
            guard let boxes = host.webhookBoxes(shard: shard) else { continue }
            if let wanted, webhookBook.outboxReaders.everyNode {
                subscribe(shard, wanted: wanted, boxes: boxes, poster: poster, now: now)
            }
            for namespace in boxes.keys.sorted() {
                backlogs[namespace, default: [:]][shard] =
                    tend(boxes[namespace]!, WebhookCopyBook.Key(shard: shard, namespace: namespace),
                         wanted: wanted?[namespace] != nil, poster: poster, now: now, wallNow: wallNow)
            }
        }
        for (namespace, byShard) in backlogs { poster.backlog(namespace: namespace, byShard: byShard) }
    }

    /// One app's box on a shard this node leads: trims what the app server took, then drops what is too old or
    /// makes the next call; returns what still waits for the app server (W5). The book is written before a call
    /// or a proposal starts: either may complete at once.
    private func tend(_ box: WebhookOutbox.Box, _ key: WebhookCopyBook.Key, wanted: Bool, poster: any WebhookCopyPoster,
                      now: NIODeadline, wallNow: Int64) -> (pending: Int, oldestMillis: Int64) {
        let progress = webhookBook.progress[key] ?? WebhookCopyBook.Progress()
        webhookBook.progress[key] = progress
        // What an earlier call delivered and the log has not trimmed yet.
        let sent = progress.sent.map { sent in box.pending.prefix { $0.position <= sent }.count } ?? 0
        let unsent = box.pending.dropFirst(sent)
        let waiting = (pending: unsent.count, oldestMillis: unsent.first.map { max(0, wallNow - $0.time) } ?? 0)
        if sent > 0, progress.mayTrim(now: now),
           sent >= Self.webhookTrimAfter || now - progress.trimmedAt >= Self.webhookTrimInterval {
            trim(key, through: box.pending[sent - 1].position, delivered: true, now: now) { _ in }
        }
        guard !unsent.isEmpty, !progress.calling, progress.retryAt.map({ $0 <= now }) ?? true else { return waiting }
        let expired = unsent.prefix { wallNow - $0.time > webhookCopyMaxAgeMillis }
        if let last = expired.last {
            // Dropped only once what was delivered before them left the box (the counts stay true).
            guard sent == 0, webhookBook.progress[key]!.mayTrim(now: now) else { return waiting }
            let count = expired.count  // not the slice: it would hold the box's queue while it grows
            let why = "older than \(webhookCopyMaxAgeMillis / 1000) s"
            trim(key, through: last.position, delivered: false, now: now) { applied in
                if applied { poster.dropped(namespace: key.namespace, count: count, why: why) }
            }
            return waiting
        }
        // An app whose webhooks went off keeps its box until the subscription change removes it.
        guard wanted else { return waiting }
        let batch = Array(unsent.prefix(Self.webhookBatch))
        webhookBook.progress[key]!.calling = true
        poster.post(batch, namespace: key.namespace, shard: key.shard, eventLoop: loop).whenComplete { result in
            switch result {
            case .success: self.webhookBook.progress[key]?.delivered(through: batch.last!.position)
            case .failure: self.webhookBook.progress[key]?.failed(now: .now())
            }
        }
        return waiting
    }

    /// Proposes what each app wants where the shard's outbox differs (a box made, changed or removed). A box is
    /// widened (or made) at once: a kind kept too long costs copies the next look drops. It is narrowed (a kind
    /// dropped, or the box removed with every copy it holds) only on a view of the app's settings read after this
    /// node's meta replica caught up: the poster's view is refreshed every 2 s, so a node that has just taken the
    /// lead can hold one from before the app turned its webhooks on, and would drop what the last leader kept —
    /// every event of the app's rooms until its next refresh (W2).
    private func subscribe(_ shard: ShardID, wanted: [String: WebhookCopyKinds], boxes: [String: WebhookOutbox.Box],
                           poster: any WebhookCopyPoster, now: NIODeadline) {
        for namespace in Set(wanted.keys).union(boxes.keys).sorted() {
            let kinds = wanted[namespace] ?? []
            let held = boxes[namespace]?.kinds ?? []
            guard kinds != held else { continue }
            let key = WebhookCopyBook.Key(shard: shard, namespace: namespace)
            if held.isSubset(of: kinds) {
                propose(kinds, key, removing: 0, poster: poster)
                continue
            }
            if let checked = webhookBook.narrowingChecked[key], now - checked < .seconds(1) { continue }
            guard webhookBook.subscribing.insert(key).inserted else { continue }
            webhookBook.narrowingChecked[key] = now
            metaStateCaughtUp().whenComplete { result in
                self.webhookBook.subscribing.remove(key)
                guard case .success(let state?) = result else { return }
                poster.readSettings(from: state)
                guard let view = poster.copyKinds(), let box = self.host.webhookBoxes(shard: shard)?[namespace] else { return }
                let fresh = view[namespace] ?? []
                guard fresh != box.kinds else { return }
                self.propose(fresh, key, removing: fresh.isEmpty ? box.pending.count : 0, poster: poster)
            }
        }
    }

    /// Proposes `kinds` for the box of `key`; one proposal per box at a time. `removing`: the copies a removal drops.
    private func propose(_ kinds: WebhookCopyKinds, _ key: WebhookCopyBook.Key, removing: Int, poster: any WebhookCopyPoster) {
        guard webhookBook.subscribing.insert(key).inserted else { return }
        host.propose(.webhook(.subscribe(namespace: key.namespace, kinds: kinds)), shard: key.shard, actor: .appServer,
                     timestamp: Self.now()) { result in
            self.webhookBook.subscribing.remove(key)
            guard case .success = result, kinds.isEmpty else { return }
            if removing > 0 {
                poster.dropped(namespace: key.namespace, count: removing, why: "the app's after-event callbacks went off")
            }
            // A removed box is no longer reported each tick: its backlog is none now, not its last figure for 5 s.
            poster.backlog(namespace: key.namespace, byShard: [key.shard: (pending: 0, oldestMillis: 0)])
        }
    }

    /// Proposes `trim` through `through`; `done` hears whether it applied. One per box at a time.
    private func trim(_ key: WebhookCopyBook.Key, through: WebhookPosition, delivered: Bool, now: NIODeadline,
                      _ done: @escaping (Bool) -> Void) {
        webhookBook.progress[key]!.trimming = now
        host.propose(.webhook(.trim(namespace: key.namespace, through: through, delivered: delivered)), shard: key.shard,
                     actor: .appServer, timestamp: Self.now()) { result in
            self.webhookBook.progress[key]?.trimmed()
            if case .success = result { done(true) } else { done(false) }
        }
    }
}
