import Metrics
import NIOCore
import ParleyRaft
import ParleyStorage
import ParleyRaftWire

/// Issue 17: caps the bytes per second of snapshot chunks a node sends, so moving a shard (a new replica is
/// filled by a snapshot of every room in it) does not take the bandwidth and disk reads its clients' traffic
/// needs. CockroachDB caps rebalancing snapshots the same way (32 MiB/s by default).
///
/// A token bucket: a chunk leaves while the bucket is not in debt and takes its size from it; chunks beyond
/// wait, in order, until the bucket has refilled. Everything else (appends, heartbeats, votes) passes at
/// once, so a group's replication never waits behind another group's snapshot. Runs on the driver's loop.
///
/// The leader resends from what the follower acknowledged when acknowledgements stop between two heartbeat
/// answers (`Raft.handleHeartbeatResponse`): held chunks make that happen, so a chunk already waiting here
/// is not queued twice, and one sent moments ago over a live connection (still on its way) is not sent
/// again until `resendAfter` has passed.
final class SnapshotPacer {
    private struct Key: Hashable {
        var to: NodeID
        var group: GroupID
        var snapshot: LogIndex
        var offset: UInt64
    }

    /// Zero: no cap.
    let bytesPerSecond: Int
    let resendAfter: TimeAmount
    private let loop: EventLoop
    private let deliver: (NodeID, [RaftEnvelope]) -> Void
    /// Bytes of chunks sent (`parley_snapshot_bytes_sent_total`), set once the host's metrics exist.
    var sentBytes: Counter?
    private var tokens: Double
    private var refilledAt: NIODeadline
    private var held: [(key: Key, envelope: RaftEnvelope)] = []
    private var heldKeys = Set<Key>()
    private var recentlySent: [Key: NIODeadline] = [:]
    private var releaseScheduled = false
    /// Chunks that waited for the cap, for tests and /status.
    private(set) var delayedChunks = 0

    init(bytesPerSecond: Int, resendAfter: TimeAmount = .seconds(1), loop: EventLoop,
         deliver: @escaping (NodeID, [RaftEnvelope]) -> Void) {
        self.bytesPerSecond = max(0, bytesPerSecond)
        self.resendAfter = resendAfter
        self.loop = loop
        self.deliver = deliver
        tokens = Double(Self.capacity(bytesPerSecond))
        refilledAt = .now()
    }

    /// A quarter second's worth: a burst after a quiet spell stays short.
    private static func capacity(_ bytesPerSecond: Int) -> Int { max(bytesPerSecond / 4, 64 << 10) }

    /// Chunks waiting for the cap.
    var waiting: Int { held.count }

    /// Sends `batch` to `peer`: everything but the snapshot chunks the cap holds back.
    func send(_ peer: NodeID, _ batch: [RaftEnvelope]) {
        guard batch.contains(where: { $0.message.kind == .snapshot }) else { return deliver(peer, batch) }
        let now = NIODeadline.now()
        refill(now)
        var out: [RaftEnvelope] = []
        for envelope in batch {
            guard envelope.message.kind == .snapshot, let chunk = envelope.message.snapshot else {
                out.append(envelope)
                continue
            }
            let key = Key(to: peer, group: envelope.group, snapshot: chunk.metadata.index, offset: envelope.message.snapshotOffset)
            if heldKeys.contains(key) { continue }
            if let sent = recentlySent[key], now - sent < resendAfter { continue }
            if bytesPerSecond == 0 || (held.isEmpty && tokens > 0) {
                take(key, envelope, now)
                out.append(envelope)
            } else {
                held.append((key, envelope))
                heldKeys.insert(key)
                delayedChunks += 1
            }
        }
        if !out.isEmpty { deliver(peer, out) }
        scheduleRelease()
    }

    private func take(_ key: Key, _ envelope: RaftEnvelope, _ now: NIODeadline) {
        let bytes = envelope.message.snapshot?.data.count ?? 0
        tokens -= Double(bytes)
        recentlySent[key] = now
        sentBytes?.increment(by: bytes)
    }

    private func refill(_ now: NIODeadline) {
        guard bytesPerSecond > 0 else { return }
        let seconds = Double((now - refilledAt).nanoseconds) / 1e9
        tokens = min(Double(Self.capacity(bytesPerSecond)), tokens + seconds * Double(bytesPerSecond))
        refilledAt = now
        if recentlySent.count > 256 { recentlySent = recentlySent.filter { now - $0.value < resendAfter } }
    }

    /// Sends the held chunks the bucket allows now, and comes back for the rest.
    private func release() {
        releaseScheduled = false
        let now = NIODeadline.now()
        refill(now)
        var byPeer: [NodeID: [RaftEnvelope]] = [:]
        var order: [NodeID] = []
        while let first = held.first, tokens > 0 {
            held.removeFirst()
            heldKeys.remove(first.key)
            take(first.key, first.envelope, now)
            if byPeer[first.key.to] == nil { order.append(first.key.to) }
            byPeer[first.key.to, default: []].append(first.envelope)
        }
        for peer in order { deliver(peer, byPeer[peer]!) }
        scheduleRelease()
    }

    private func scheduleRelease() {
        guard !held.isEmpty, !releaseScheduled else { return }
        releaseScheduled = true
        let wait = max(1, Int64(-tokens / Double(max(bytesPerSecond, 1)) * 1000))
        loop.scheduleTask(in: .milliseconds(wait)) { self.release() }
    }
}
