import Foundation
import ParleyCluster
import ParleyHost
import ParleyRaft
import ParleyRooms
import ParleyStorage
import ParleyRaftWire
import ParleyShardState
import ParleyPlacement

/// Several `RaftHost`s with real SQLite databases on one thread, wired by an in-memory network that
/// the test can cut. Time is counted in cycles; every `ticksEvery` cycles each host ticks once.
final class InProcessCluster {
    private(set) var nodes: [NodeID]
    /// Nodes that joined after the cluster was founded (they found no groups).
    private(set) var joined: Set<NodeID> = []
    let shardMap: ShardMap
    let directory: URL
    var hosts: [NodeID: RaftHost] = [:]
    var databases: [NodeID: NodeDatabase] = [:]
    var boots: [NodeID: UInt64] = [:]
    var inflight: [(to: NodeID, envelopes: [RaftEnvelope])] = []
    /// Each node's applied room events, shard by shard in log order, as its replicas' event logs hold them
    /// for the edges' feeds (gathered after every step; a restarted node's from its replay on).
    var events: [NodeID: [(ShardID, RoomEvent)]] = [:]
    /// Where `gatherEvents` left off in each node's event log of each shard.
    private var eventCursors: [NodeID: [ShardID: LogIndex]] = [:]
    var snapshotEvery: LogIndex = 10_000
    var snapshotEveryBytes = 16 << 20
    var historyFlushTicks = 4
    var rewriteAfterRows: Int64 = 131_072
    var logRewriteMaxBytes = 1 << 20
    var limits = RoomLimits()
    var memory = MemoryBounds()
    /// What one group hands to apply per cycle (Raft's default when nil; a node sets 128 KiB).
    var committedBytesPerReady: Int?
    var clock: Int64 = 1_700_000_000_000
    private var cycle = 0
    var ticksEvery = 2

    /// Leaders write proposals in the request's own form (`GroupProposal` form 4), as a node does once every node
    /// of its cluster reads it; false: form 3, as beside an older node.
    var requestForm = true
    /// Leaders defer commit notices (`RaftConfig.deferCommitNotice`, as a node runs them).
    let deferCommitNotice: Bool

    init(nodes: [NodeID] = [1, 2, 3], shards: Int = 4, deferCommitNotice: Bool = false) throws {
        self.nodes = nodes
        self.deferCommitNotice = deferCommitNotice
        shardMap = ShardMap(shardCount: shards, replicationFactor: 3)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-cluster-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for n in nodes { try start(n) }
    }

    /// The databases go with the cluster: a full test run made ~150 of these folders and left them all in /tmp.
    deinit {
        hosts.removeAll()
        databases.removeAll()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts (or restarts) a node from its database.
    func start(_ node: NodeID) throws {
        boots[node, default: 0] += 1
        var config = RaftHost.Config(nodeID: node, nodes: nodes.filter { !joined.contains($0) }, shardMap: shardMap,
                                     boot: boots[node]!)
        config.founding = !joined.contains(node)
        config.snapshots.every = snapshotEvery
        config.snapshots.everyBytes = snapshotEveryBytes
        config.historyFlushTicks = historyFlushTicks
        config.logRewriteMaxBytes = logRewriteMaxBytes
        config.limits = limits
        config.snapshots.keep = 5
        config.memory = memory
        if let committedBytesPerReady { config.raft.maxCommittedSizePerReady = committedBytesPerReady }
        config.raft.deferCommitNotice = deferCommitNotice
        config.commitNoticeMillis = 3_600_000  // tests send the notices themselves (`sendCommitNotices`)
        let db = try NodeDatabase(path: directory.appendingPathComponent("node-\(node).sqlite").path, durable: false,
                                  rewriteAfterRows: rewriteAfterRows)
        databases[node] = db
        hosts[node] = try RaftHost(config: config, database: db,
            send: { [unowned self] to, envelopes in inflight.append((to, envelopes)) })
        hosts[node]!.writesRequestForm = requestForm
        eventCursors[node] = [:]
    }

    /// Issue 17: a node that joins the running cluster: it founds nothing and holds what groups give it.
    func join(_ node: NodeID) throws {
        nodes.append(node)
        joined.insert(node)
        try start(node)
    }

    /// Stops and starts every node, so settings changed since they started take effect.
    func restartAll() throws {
        for n in nodes { stop(n); try start(n) }
    }

    /// A crash: the node's process is gone with everything in flight to it.
    func stop(_ node: NodeID) {
        hosts[node] = nil
        inflight.removeAll { $0.to == node }
    }

    func step() throws {
        cycle += 1
        clock += 10
        let deliver = inflight
        inflight = []
        for (to, envelopes) in deliver { hosts[to]?.receive(envelopes) }
        if cycle % ticksEvery == 0 { for n in nodes { hosts[n]?.tick() } }
        for n in nodes {
            try hosts[n]?.processReady()
            if hosts[n]?.deferredWritesDue == true { try hosts[n]?.writeDeferred() }  // as the driver does
            gatherEvents(n)
        }
    }

    /// Moves what `node`'s event logs gained since the last step into `events`.
    private func gatherEvents(_ node: NodeID) {
        guard let host = hosts[node] else { return }
        for shard in host.shards.sorted() {
            var cursor = eventCursors[node]?[shard] ?? 0
            while let page = host.eventPage(shard: shard, after: cursor) {
                events[node, default: []] += page.batches.flatMap(\.events).map { (shard, $0) }
                cursor = page.cursor
                if page.batches.isEmpty { break }
            }
            eventCursors[node, default: [:]][shard] = cursor
        }
    }

    func run(cycles: Int) throws { for _ in 0..<cycles { try step() } }

    /// Runs until `done` holds, failing after `limit` cycles.
    func run(until done: () -> Bool, limit: Int = 2_000, _ what: String = "condition") throws {
        for _ in 0..<limit {
            if done() { return }
            try step()
        }
        if !done() { throw ClusterTestError.timeout(what) }
    }

    func leader(of shard: ShardID) -> NodeID? {
        let leaders = hosts.values.compactMap { host -> NodeID? in
            guard let s = host.status().first(where: { $0.shard == shard }) else { return nil }
            return s.role == .leader ? host.config.nodeID : nil
        }
        // With messages flowing, a deposed leader learns of the new one within a cycle or two.
        return leaders.count == 1 ? leaders[0] : nil
    }

    func allShardsHaveLeaders() -> Bool { (0..<shardMap.shardCount).allSatisfy { leader(of: $0) != nil } }

    /// Proposes through the shard's current leader and runs the cluster until the command applied there.
    @discardableResult
    func submit(_ command: RoomCommand, room: String, as actor: CommandActor = .appServer,
                requestKey: RequestKey? = nil) throws -> ApplyOutcome {
        let shard = shardMap.shard(ofRoom: room)
        try run(until: { leader(of: shard) != nil }, "a leader for shard \(shard)")
        var answer: Result<ApplyOutcome, ClusterError>?
        hosts[leader(of: shard)!]!.propose(command, shard: shard, actor: actor, timestamp: clock,
                                           requestKey: requestKey) { answer = $0 }
        try run(until: { answer != nil }, "the proposal to apply")
        return try answer!.get()
    }

    /// The rooms state of `shard` on every running node, once all have applied the same index.
    func replicasAgree(on shard: ShardID) -> Bool {
        let holders = hosts.values.filter { $0.shards.contains(shard) }
        let statuses = holders.map { $0.status().first { $0.shard == shard }! }
        guard Set(statuses.map(\.applied)).count == 1 else { return false }
        return Set(holders.map { $0.roomsSnapshot(shard: shard)! }).count == 1
    }
}

enum ClusterTestError: Error { case timeout(String) }

func session(_ user: String, device: Int = 1, edge: String = "edge-1") -> CommandActor {
    .session(SessionIdentity(userId: user, sessionId: "\(user)#\(device)", edgeId: edge))
}
