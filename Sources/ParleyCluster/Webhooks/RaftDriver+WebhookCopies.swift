import NIOCore
import ParleyPlacement
import ParleyShardState

/// SPEC W2 / W4 (docs/webhooks.md, "After-event callbacks"): each shard's leader delivers its apps' boxes. Per
/// app and shard one call at a time, oldest first: the copies go to the app server, and once it answered 2xx
/// the leader proposes `trim` through the last of them, so the next call starts after it. A call cut short by
/// a leader change, a crash or a timeout is simply made again by whoever leads, from the box as the log left
/// it: every event is delivered at least once, in log order (so in order per room), and the app server drops
/// a repeat by its id. A failing app server is called again after a back-off (0.5 s doubling to 30 s); copies
/// older than `webhookCopyMaxAgeMillis` are dropped unsent, counted.
extension RaftDriver {
    /// Copies per call.
    static let webhookBatch = 100

    func deliverWebhookCopies() {
        loop.preconditionInEventLoop()
        guard let poster = webhookCopies else { return }
        let now = NIODeadline.now()
        askWhetherEveryNodeKeepsCopies(now)
        // Nil until the node read its apps' settings: a box is never dropped for a setting not yet known.
        let wanted = poster.copyKinds()
        let wallNow = Self.now()
        for shard in host.shards {
            guard let boxes = host.webhookBoxes(shard: shard) else { continue }
            if let wanted, webhookBook.everyNodeReads { subscribe(shard, wanted: wanted, boxes: boxes, poster: poster) }
            for namespace in boxes.keys.sorted() {
                let box = boxes[namespace]!
                let key = WebhookCopyBook.Key(shard: shard, namespace: namespace)
                poster.backlog(namespace: namespace, shard: shard, pending: box.pending.count,
                               oldestMillis: box.pending.first.map { max(0, wallNow - $0.time) } ?? 0)
                guard !box.pending.isEmpty, !webhookBook.inFlight.contains(key) else { continue }
                if let at = webhookBook.retryAt[key], at > now { continue }
                let expired = box.pending.prefix { wallNow - $0.time > webhookCopyMaxAgeMillis }
                if let last = expired.last {
                    webhookBook.inFlight.insert(key)
                    trim(key, through: last.position, delivered: false).whenComplete { result in
                        if case .success = result {
                            poster.dropped(namespace: namespace, count: expired.count,
                                           why: "older than \(self.webhookCopyMaxAgeMillis / 1000) s")
                        }
                        self.webhookBook.inFlight.remove(key)
                    }
                    continue
                }
                // An app whose webhooks went off keeps its box until the subscription change removes it.
                guard wanted?[namespace] != nil else { continue }
                let batch = Array(box.pending.prefix(Self.webhookBatch))
                webhookBook.inFlight.insert(key)
                poster.post(batch, namespace: namespace, shard: shard, eventLoop: loop)
                    .flatMap { self.trim(key, through: batch.last!.position, delivered: true) }
                    .whenComplete { result in
                        switch result {
                        case .success: self.webhookBook.succeeded(key)
                        case .failure: self.webhookBook.failed(key, now: .now())
                        }
                    }
            }
        }
    }

    /// Proposes what each app wants where the shard's outbox differs (a box made, changed or removed).
    private func subscribe(_ shard: ShardID, wanted: [String: WebhookCopyKinds], boxes: [String: WebhookOutbox.Box],
                           poster: any WebhookCopyPoster) {
        for namespace in Set(wanted.keys).union(boxes.keys).sorted() {
            let kinds = wanted[namespace] ?? []
            guard kinds != (boxes[namespace]?.kinds ?? []) else { continue }
            let key = WebhookCopyBook.Key(shard: shard, namespace: namespace)
            guard webhookBook.subscribing.insert(key).inserted else { continue }
            let removed = kinds.isEmpty ? boxes[namespace]?.pending.count ?? 0 : 0
            host.proposeWebhook(.subscribe(namespace: namespace, kinds: kinds), shard: shard, timestamp: Self.now()) { result in
                self.webhookBook.subscribing.remove(key)
                if case .success = result, removed > 0 {
                    poster.dropped(namespace: namespace, count: removed, why: "the app's after-event callbacks went off")
                }
            }
        }
    }

    private func trim(_ key: WebhookCopyBook.Key, through: WebhookPosition, delivered: Bool) -> EventLoopFuture<Void> {
        let promise = loop.makePromise(of: Void.self)
        host.proposeWebhook(.trim(namespace: key.namespace, through: through, delivered: delivered), shard: key.shard,
                            timestamp: Self.now()) { result in
            switch result {
            case .success: promise.succeed()
            case .failure(let error): promise.fail(error)
            }
        }
        return promise.futureResult
    }

    /// Shard leaders keep copies once every node of the registry reads the outbox (a rolling upgrade: until
    /// then no box is made).
    private func askWhetherEveryNodeKeepsCopies(_ now: NIODeadline) {
        let book = webhookBook
        if let asked = book.askedAt, now - asked < (book.everyNodeReads ? .seconds(5) : .seconds(1)) { return }
        book.askedAt = now
        everyNode(has: .webhookCopies) { every in book.everyNodeReads = every }
    }
}
