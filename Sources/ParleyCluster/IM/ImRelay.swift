import NIOCore
import ParleyIM
import ParleyRooms
import ParleyPlacement

/// Which shards' outboxes are being relayed from this node, and when a failed relay may try again.
final class ImRelayBook {
    var inFlight = Set<ShardID>()
    var retryAt: [ShardID: NIODeadline] = [:]
    /// Issue 33: blocklists screen relayed effects once every node applies `screenedEffects` (a rolling
    /// upgrade: until then the relay proposes `effects`, which every node applies alike).
    let screening = PeerFeatureWatch(.imScreening)

    /// `stalled`: nothing of the relay was confirmed, so the next one waits a moment.
    func done(_ shard: ShardID, stalled: Bool) {
        inFlight.remove(shard)
        retryAt[shard] = stalled ? .now() + .milliseconds(200) : nil
    }
}

/// Issue 19 (docs/im.md, "effects"): each shard's leader relays its outbox. Per target shard, in sequence
/// order and from the first unconfirmed effect (so the target's per-source high-water mark never skips one),
/// it proposes `effects(from:)` to the target's group; the target applies those above its mark and answers
/// the mark; the source then proposes `confirm` for what the targets hold, which trims its outbox. A relay
/// cut short by a leader change, a timeout or a crash is simply made again by whoever leads: the targets'
/// marks make a resend change nothing, so every effect applies once and in order.
extension RaftDriver {
    /// Effects per target shard in one relay: bounds the entry a relay proposes.
    static let relayBatch = 256

    func relayEffects() {
        loop.preconditionInEventLoop()
        let now = NIODeadline.now()
        refresh(relay.screening, now: now)
        for shard in host.shards where !relay.inFlight.contains(shard) {
            if let at = relay.retryAt[shard], at > now { continue }
            guard let outbox = host.imOutbox(shard: shard) else { continue }
            relay.inFlight.insert(shard)
            relayOutbox(outbox, from: shard)
        }
    }

    private func relayOutbox(_ outbox: [OutboxEntry], from source: ShardID) {
        var byTarget: [ShardID: [OutboxEntry]] = [:]
        var targets: [ShardID] = []
        for entry in outbox {
            let target = shardMap.shard(ofUser: entry.effect.target)
            if byTarget[target] == nil { targets.append(target) }
            if byTarget[target, default: []].count < Self.relayBatch { byTarget[target, default: []].append(entry) }
        }
        let deadline = NIODeadline.now() + .seconds(3)
        let sends = targets.map { target in
            let entries = byTarget[target]!
            let command: ImShardCommand = relay.screening.everyNode ? .screenedEffects(from: source, entries) : .effects(from: source, entries)
            return submit(.im(shard: target, actor: .appServer, account: "", command: command), deadline: deadline)
                .map { outcome -> [UInt64] in
                    guard case .success(.effects(_, let upTo)) = outcome.imAnswer else { return [] }
                    return entries.filter { $0.seq <= upTo }.map(\.seq)
                }
                .recover { _ in [] }
        }
        EventLoopFuture.whenAllComplete(sends, on: loop).flatMap { results -> EventLoopFuture<Bool> in
            let done = results.flatMap { (try? $0.get()) ?? [] }
            guard !done.isEmpty else { return self.loop.makeSucceededFuture(false) }
            return self.submit(.im(shard: source, actor: .appServer, account: "", command: .confirm(done.sorted())),
                               deadline: deadline)
                .map { outcome in if case .success = outcome.imAnswer { true } else { false } }
                .recover { _ in false }
        }.whenComplete { result in
            // Whatever is left (a target's leader was away, a batch was cut) is relayed again by a later round
            // of the "IM relay" duty, at once when this one made progress.
            self.relay.done(source, stalled: (try? result.get()) != true)
        }
    }
}
