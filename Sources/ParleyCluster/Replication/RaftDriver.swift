import ParleyHost
import Foundation
import NIOCore
import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyTransport
import ParleyRaftWire
import ParleyShardState
import ParleyPlacement

/// Runs one of a node's `RaftHost`s (its loop's partition of the groups, `RaftLoops`) on one event loop:
/// ticks it on a timer, feeds it peers' batches, runs its ready loop whenever there is work, and routes
/// commands to shard leaders (here or on another node), retrying when leadership moves. Everything that
/// touches the host happens on `loop`.
public final class RaftDriver: @unchecked Sendable {
    public let loop: EventLoop
    let host: RaftHost
    let transport: PeerTransport
    let feeds: EdgeFeedBoard
    /// Between `start` and `stop` (or a storage failure): the duties run only then.
    private(set) var driving = false
    let leaderBalance: LeaderBalanceSettings
    let moves: ReplicaMoveSettings
    /// Caps the snapshot bytes this node sends per second (issue 17).
    let snapshots: SnapshotPacer
    /// A balance round is gathering views (rounds never overlap).
    var balancing = false
    /// The planner is asking whether removed nodes can be dropped (`dropMovedOffNodes`).
    var checkingDrops = false
    /// This node's state in the registry as the last placement look saw it (`handOffLeaderships`).
    var registryState: NodeRecord.State?
    /// The meta state as last fetched from a meta replica (on a node that holds none).
    var fetchedMeta: MetaState?
    private let tickInterval: TimeAmount
    private var tickTask: RepeatedTask?
    private var readyScheduled = false
    /// Issue 35: set while a commit index waits for an append to carry it (`RaftHost.oldestCommitNotice`).
    private var commitNoticeTimer: Scheduled<Void>?
    private var deferredWriteScheduled = false
    /// Set when the ready loop fails (the disk): the node stops taking part rather than risk safety.
    private var fatal: Error?
    /// A1: clients' message budgets on the shards this node leads.
    let throttle = SendThrottle()
    /// Messages refused over budget here (for /metrics).
    public internal(set) var sendsOverBudget = 0
    /// Issue 19: the IM effects this node's shard leaders are relaying.
    let relay = ImRelayBook()
    /// The node's drivers, one per Raft loop (issue 35), for what another loop's groups answer; set by
    /// `RaftLoops` before the driver starts.
    weak var loops: RaftLoops?
    /// The groups this driver's host holds of the node's.
    let partition: HostPartition
    /// SPEC W3: where a client's message in a room its app checks is shown to the app server first.
    var preSend: (any PreSendGate)?
    /// SPEC W2: where this driver's shard leaders send their apps' after-event copies.
    var webhookCopies: (any WebhookCopyPoster)?
    /// What those copies are doing.
    let webhookBook = WebhookCopyBook()
    /// W4: copies older than this are dropped unsent (counted): an hour by default.
    public var webhookCopyMaxAgeMillis: Int64 = 3_600_000
    /// SPEC D1: whether every node reads `setHistoryWindow`, and the shards with one in flight.
    let windowReaders = PeerFeatureWatch(.historyWindow)
    /// Issue 34: whether every node's `/rpc/v1/propose` reads IM commands (`peerCall`).
    let shardRequestReaders = PeerFeatureWatch(.shardRequests)
    /// Issue 34: whether every node reads entries in the request's own form and serves `/rpc/v1/meta/request`
    /// (`RaftHost.writesRequestForm`, `submitMeta`).
    let requestEntryReaders = PeerFeatureWatch(.requestEntries)
    var settingWindow: Set<ShardID> = []
    /// Issue 38 item 5: the same for the IM logs' windows (`setLogWindow`).
    let imWindowReaders = PeerFeatureWatch(.imLogWindow)
    var settingImWindow: Set<ShardID> = []

    /// Builds the host on `loop`.
    init(loop: EventLoop, transport: PeerTransport, tickInterval: TimeAmount,
         leaderBalance: LeaderBalanceSettings = LeaderBalanceSettings(),
         moves: ReplicaMoveSettings = ReplicaMoveSettings(),
         makeHost: (_ send: @escaping (NodeID, [RaftEnvelope]) -> Void) throws -> RaftHost,
         edgeLeaseMillis: Int64 = 6_000, metrics: RouteMetrics) throws {
        self.loop = loop
        self.leaderBalance = leaderBalance
        self.moves = moves
        feeds = EdgeFeedBoard(leaseMillis: edgeLeaseMillis, takeoverMillis: Self.pollCallTimeoutMillis)
        self.transport = transport
        self.tickInterval = tickInterval
        let pacer = SnapshotPacer(bytesPerSecond: moves.snapshotBytesPerSecond, loop: loop) { peer, batch in
            transport.send(to: peer, batch)
        }
        host = try makeHost { peer, batch in pacer.send(peer, batch) }
        partition = host.config.partition
        host.historyPages.loop = loop
        pacer.sentBytes = metrics.snapshotBytesSent
        snapshots = pacer
        host.answered = { transport.flushAnswers(on: loop) }
    }

    public var nodeID: NodeID { host.config.nodeID }
    public var shardMap: ShardMap { host.config.shardMap }

    /// The driver of `shard`'s loop when that is not this one (issue 35): what reaches this driver about
    /// another loop's shard is handed there, and its answer comes back to this loop.
    func elsewhere(_ shard: ShardID) -> RaftDriver? {
        guard partition.count > 1, !partition.holds(shard: shard), (0..<shardMap.shardCount).contains(shard) else {
            return nil
        }
        return loops?.driver(for: shard)
    }

    /// The first loop's driver, which holds the meta group, when this is another.
    var metaDriver: RaftDriver? { partition.holdsMeta ? nil : loops?.drivers.first }

    public func start() {
        loop.execute {
            self.tickTask = self.loop.scheduleRepeatedTask(initialDelay: self.tickInterval, delay: self.tickInterval) { _ in
                self.host.tick()
                self.runReady()
                self.endPolls()
            }
            self.driving = true
            self.runReady()
        }
    }

    public func stop() -> EventLoopFuture<Void> {
        loop.submit {
            self.stopDriving()
            // Neither is needed for safety (a restart applies the entries again, the leader resends the
            // commit index), but a restart is cheaper with them.
            try? self.host.writeCarried()
            // The rows are handed to the history store's own thread: wait for them, or a process that exits
            // right after stopping leaves its history behind its log (rebuilt on the next start, but the
            // stopped node's store is what an operator and the chaos checker read).
            try? self.host.flushHistory(waitingForTheDisk: true)
        }
    }

    /// A batch from a peer.
    public func receive(from peer: NodeID, _ batch: [RaftEnvelope]) {
        loop.execute {
            self.host.receive(batch)
            self.scheduleReady()
        }
    }

    /// The connection to a peer broke: quiet groups wake up so a dead leader is replaced.
    public func peerUnreachable(_ peer: NodeID) {
        loop.execute {
            self.host.peerUnreachable(peer)
            self.scheduleReady()
        }
    }

    public func peerReachable(_ peer: NodeID) {
        loop.execute {
            self.host.peerReachable(peer)
            self.scheduleReady()
        }
    }

    func scheduleReady() {
        guard !readyScheduled else { return }
        readyScheduled = true
        loop.execute {
            self.readyScheduled = false
            self.runReady()
        }
    }

    private func runReady() {
        guard fatal == nil else { return }
        do {
            if try host.processReady() > 0 {
                wakePolls()
                scheduleReady()
            }
            // A cycle sends the commit indexes that waited long enough with its other messages (under load the
            // loop runs cycles all the time); the timer makes one for a loop gone quiet.
            if commitNoticeTimer == nil, let oldest = host.oldestCommitNotice { armCommitNotices(after: oldest) }
            if host.deferredWritesDue && !deferredWriteScheduled {
                deferredWriteScheduled = true
                loop.execute {
                    self.deferredWriteScheduled = false
                    guard self.fatal == nil else { return }
                    do { try self.host.writeDeferred() } catch { self.stopAfter(error) }
                }
            }
        } catch {
            stopAfter(error)
        }
    }

    /// At `since` + `commitNoticeMillis`, runs a cycle, which sends the commit indexes that waited that long
    /// (and arms this again for the next, if any).
    private func armCommitNotices(after since: ContinuousClock.Instant) {
        let left = max(.zero, since + .milliseconds(host.config.commitNoticeMillis) - .now)
        commitNoticeTimer = loop.scheduleTask(in: .nanoseconds(Int64(left / .nanoseconds(1)))) {
            self.commitNoticeTimer = nil
            guard self.driving else { return }
            self.runReady()
        }
    }

    /// A storage failure: the node stops driving Raft rather than go on with state it could not write.
    private func stopAfter(_ error: Error) {
        fatal = error
        stopDriving()
    }

    /// No more ticks, so no more polls parked here: the waiting ones are answered now.
    private func stopDriving() {
        tickTask?.cancel()
        tickTask = nil
        commitNoticeTimer?.cancel()
        commitNoticeTimer = nil
        driving = false
        endPolls(now: .distantFuture)
    }

    /// The driver's periodic work besides the tick (issue 34): the node runs each as a service of its one
    /// `ServiceGroup`; a duty's `run` does its work on the driver's loop, and nothing once the driver stopped.
    public var duties: [DriverDuty] {
        var duties = [
            duty("edge leases", every: .seconds(1)) {
                $0.expireSilentEdges()
                $0.carryLeases()
                $0.throttle.dropIdle(now: Self.now())
                $0.refresh($0.shardRequestReaders, now: .now())
                $0.refresh($0.requestEntryReaders, now: .now())
                $0.host.writesRequestForm = $0.requestEntryReaders.everyNode
            },
            // N5: durable history older than the retention window goes once a minute.
            duty("history expiry", after: .seconds(5), every: .seconds(60)) { _ = try? $0.host.expireHistory(now: Self.now()) },
            // Issue 19: what this node's IM shard leaders owe other shards (a message's copy for its receiver,
            // a friend request's other side) goes out at the tick's pace; a shard with a batch in flight waits.
            duty("IM relay", every: tickInterval) { $0.relayEffects() },
            // SPEC W2: the apps' after-event copies go out from each shard's leader at the tick's pace.
            duty("webhook copies", every: tickInterval) { $0.deliverWebhookCopies() },
            // SPEC D1: each shard led here holds its rooms' windows within the node's byte setting.
            duty("history windows", every: .seconds(1)) { $0.settleHistoryWindows() },
        ]
        if leaderBalance.intervalMillis > 0 && leaderBalance.transfersPerRound > 0 {
            duties.append(duty("leader balance", every: .milliseconds(leaderBalance.intervalMillis)) { $0.balanceLeaders() })
        }
        if moves.intervalMillis > 0 {
            duties.append(duty("placement", every: .milliseconds(moves.intervalMillis)) { $0.tendPlacement() })
        }
        return duties
    }

    private func duty(_ name: String, after delay: TimeAmount? = nil, every period: TimeAmount,
                      _ work: @escaping @Sendable (RaftDriver) -> Void) -> DriverDuty {
        DriverDuty(name: name, initialDelay: delay ?? period, period: period) {
            self.loop.submit { if self.driving { work(self) } }
        }
    }

    // MARK: Observation

    public func status() -> EventLoopFuture<[RaftHost.ShardStatus]> {
        loop.submit { self.host.status() }
    }

    /// A digest of each shard's rooms state, to compare replicas.
    public func stateDigests() -> EventLoopFuture<[ShardID: UInt64]> {
        loop.submit {
            var out: [ShardID: UInt64] = [:]
            for shard in self.host.shards {
                out[shard] = StableHash.mix(StableDigest.of(self.host.roomsSnapshot(shard: shard)!))
            }
            return out
        }
    }

    public var failure: Error? { fatal }
}
