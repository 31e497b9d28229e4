import Metrics
import ParleyIM
import ParleyRaft
import ParleyRooms
import ParleyStorage
import ParleyRaftWire
import ParleyShardState
import ParleyPlacement

/// The multi-Raft host of one node: every shard replica it holds and, on the nodes chosen for it, the meta
/// group — driven by one tick, one ready loop and one group commit per cycle. Single-threaded by design;
/// the driver serializes calls to it, and tests drive it directly with no clock and no network.
public final class RaftHost {
    public struct Config: Sendable {
        public var nodeID: NodeID
        /// The cluster's nodes; a shard's replicas are the first `replicationFactor` of its rendezvous order.
        public var nodes: [NodeID]
        public var shardMap: ShardMap
        /// Template for every group's Raft settings (`id` and `randomSeed` are set per group).
        public var raft: RaftConfig
        public var limits: RoomLimits
        /// Distinguishes this process's proposals from those of its earlier lives.
        public var boot: UInt64
        /// When groups snapshot and what of their logs they keep in memory after.
        public var snapshots = SnapshotRule()
        /// SPEC D1: what this host's groups keep in memory, in bytes.
        public var memory = MemoryBounds()
        /// Applied history rows are written at most this many ticks late (`HistoryFlushPolicy`).
        public var historyFlushTicks = 20
        /// A quiet group that pins old log rows writes its live entries again when they come to at most this
        /// many bytes (`relieveOldestLogPin`).
        public var logRewriteMaxBytes = 1 << 20
        /// On its first start (a database with no groups) this node founds the groups the static placement of
        /// `nodes` gives it: the cluster's first nodes do. A node that joins a running cluster founds nothing;
        /// its replicas are created when a group's leader first reaches it, and filled by a snapshot.
        public var founding = true
        /// The groups this host holds of the node's (issue 35: one host per Raft loop); the others go to the
        /// node's other hosts, which share its database.
        public var partition = HostPartition.whole
        /// With `raft.deferCommitNotice`: how long a leader's new commit index may wait for an append or
        /// heartbeat to carry it before the driver sends it by itself — what a follower's edge may add to a
        /// message's delivery in a room that is otherwise quiet.
        public var commitNoticeMillis = 2

        public init(nodeID: NodeID, nodes: [NodeID], shardMap: ShardMap = ShardMap(), raft: RaftConfig? = nil,
                    limits: RoomLimits = RoomLimits(), boot: UInt64) {
            self.nodeID = nodeID
            self.nodes = nodes
            self.shardMap = shardMap
            self.raft = raft ?? RaftConfig(id: nodeID, electionTick: 10, heartbeatTick: 1, quiesceAfterTicks: 50)
            self.limits = limits
            self.boot = boot
        }
    }

    public let config: Config
    let database: NodeDatabase
    /// Replicas by shard; `shardOrder` walks them in a stable order.
    var replicas: [ShardID: GroupReplica<ShardState>] = [:]
    /// Each shard replica's recent events, for the edges' feeds.
    var eventLogs: [ShardID: ShardEventLog] = [:]
    /// Shards that gained events since the driver last asked (it wakes the edges' polls for them).
    let newEvents = ApplyScratch()
    /// Where history reads past a room's window are finished: off this host's loop once the driver names it.
    package let historyPages: HistoryPages
    private let historyFlush: HistoryFlushPolicy
    private var ticksSinceHistoryFlush = 0
    /// A cycle's write that only moved commit indexes, waiting to go with the next write instead of costing
    /// a transaction of its own (followers had one for nearly every command: the leader's commit notice).
    /// It waits at most until the next tick.
    private var carried = StorageBatch()
    private var carriedDue = false
    private var busyCycles = 0
    var shardOrder: [ShardID]
    var meta: GroupReplica<MetaState>?
    /// Every group, shards first, in the order the ready loop walks them.
    var groups: [HostedGroup] {
        didSet { logMemory.recount(groups) }
    }
    private var logMemory = LogMemoryTally()
    /// Each group's position in `groups`.
    var groupIndex: [GroupID: Int]
    /// The groups the next ready cycle looks at.
    var due: DueGroups
    private var nextSequence: UInt64 = 0
    let send: (NodeID, [RaftEnvelope]) -> Void
    /// Runs when a cycle has answered the entries that were durable before it, ahead of its write and its
    /// acknowledgements: what waits to be sent to proposers leaves now, not after the sync (the driver writes
    /// out the RPC answers).
    public var answered: () -> Void = {}
    /// Issue 35 (`RaftConfig.deferCommitNotice`): the groups this host leads whose commit index some follower
    /// has not been sent, each with when that began. A cycle that sends the group's followers an append (which
    /// carries the index) ends it; a ready cycle sends what waited `config.commitNoticeMillis`.
    private var commitNotices: [GroupID: ContinuousClock.Instant] = [:]
    /// Issue 34: whether this host's leaders write proposals in the request's own form (`GroupProposal` form 4),
    /// which nodes before peer protocol 17 cannot read: set by the driver once every node of the cluster reads it.
    public var writesRequestForm = false
    /// Told each shard's leader as this node's replica learns it (`ShardLeaders`).
    package var leaderSeen: (ShardID, NodeID) -> Void = { _, _ in }
    let metrics: RaftMetrics
    /// The leader each group knew at its last soft-state change, in `groups` order (leader changes are
    /// counted against it).
    var knownLeaders: [NodeID]
    /// Groups whose replica was dropped here (the group removed this node), with the tick it happened: for a
    /// while a late message from their old leader must not make an empty one again.
    var retiredGroups: [GroupID: UInt64] = [:]
    /// Replicas made empty for a leader's message, with the tick: one that no snapshot filled is dropped.
    var adoptedGroups: [GroupID: UInt64] = [:]
    var hostTicks: UInt64 = 0
    /// The meta placement table as last fetched, on a node that holds no meta replica.
    public var placementHint: [[NodeID]]?

    /// Opens (or, on first start, creates) every group placed on this node (of `config.partition`).
    /// - Parameters:
    ///   - firstStart: whether the node's database held no group before any of its hosts opened it (the
    ///     node's other hosts may have founded theirs already); nil: read it here (one host per node).
    ///   - send: hands one peer the cycle's messages for it (all groups in one batch).
    ///   - metrics: where proposals, commits, elections and applied commands are counted (the node's
    ///     registry; tests that do not look leave the no-op default).
    public init(config: Config, database: NodeDatabase,
                send: @escaping (NodeID, [RaftEnvelope]) -> Void,
                metrics: any MetricsFactory = NOOPMetricsHandler.instance, firstStart: Bool? = nil) throws {
        self.config = config
        self.database = database
        historyPages = HistoryPages(database: database)
        self.send = send
        self.metrics = RaftMetrics(factory: metrics)
        historyFlush = HistoryFlushPolicy(everyTicks: config.historyFlushTicks)
        let held = Set(try database.groupIDs())
        let founding = (firstStart ?? held.isEmpty) && config.founding
        var order: [ShardID] = []
        var all: [HostedGroup] = []
        for shard in 0..<config.shardMap.shardCount where config.partition.holds(shard: shard) {
            let group = config.shardMap.group(of: shard)
            let log: DurableGroupLog
            if held.contains(group) {
                log = try database.openGroup(group)
            } else {
                let members = config.shardMap.replicas(of: shard, nodes: config.nodes)
                guard founding, members.contains(config.nodeID) else { continue }
                log = try database.createGroup(group, bootstrap: ConfState(voters: members))
            }
            let replica = try Self.makeShardReplica(shard, log: log, config: config, database: database,
                                                    scratch: newEvents, historyPages: historyPages, events: &eventLogs)
            replicas[shard] = replica
            order.append(shard)
            all.append(replica)
        }
        let metaMembers = config.shardMap.metaReplicas(nodes: config.nodes)
        if config.partition.holdsMeta,
           held.contains(ShardMap.metaGroup) || (founding && metaMembers.contains(config.nodeID)) {
            let log = held.contains(ShardMap.metaGroup) ? try database.openGroup(ShardMap.metaGroup)
                : try database.createGroup(ShardMap.metaGroup, bootstrap: ConfState(voters: metaMembers))
            let replica = try GroupReplica<MetaState>(group: ShardMap.metaGroup, log: log,
                                                      config: Self.raftConfig(ShardMap.metaGroup, config)) { MetaState() }
            meta = replica
            all.append(replica)
        } else {
            meta = nil
        }
        shardOrder = order
        groups = all
        logMemory.recount(all)
        groupIndex = Dictionary(uniqueKeysWithValues: all.enumerated().map { ($1.group, $0) })
        due = DueGroups(count: all.count)
        due.markAll()
        knownLeaders = all.map { $0.raft.softState.leader }
        for g in all { self.metrics.watch(g) }
    }


    /// The shards that applied events since the last call.
    public func takeShardsWithNewEvents() -> Set<ShardID> {
        defer { newEvents.shards.removeAll() }
        return newEvents.shards
    }

    /// The shard's events after `cursor` as this replica holds them; nil when no replica is held here.
    public func eventPage(shard: ShardID, after cursor: LogIndex?) -> ShardEventPage? {
        guard let log = eventLogs[shard], let replica = replicas[shard] else { return nil }
        let p = log.page(after: cursor)
        return ShardEventPage(shard: shard, batches: p.batches, cursor: p.cursor, gap: p.gap, leader: replica.leader)
    }

    /// N5: deletes durable history older than the retention window (at `now`, ms).
    @discardableResult
    public func expireHistory(now: Int64) throws -> Int {
        try flushHistory()
        let rooms = try database.history.deleteOlderThan(now - config.limits.historyRetentionMillis)
        return rooms + (try database.history.deleteImLogsOlderThan(now - ShardState.imLimits.logRetentionMillis))
    }

    /// Whether writes that no acknowledgement waits for are due: history rows that waited `historyFlushTicks`
    /// ticks (or enough of them), or log rows no group needs any more.
    public var deferredWritesDue: Bool { historyDue || database.mayHoldUnneededLogRows }

    private var historyDue: Bool {
        !newEvents.isEmpty
            && (ticksSinceHistoryFlush >= historyFlush.everyTicks || newEvents.bytes >= historyFlush.maxBytes)
    }

    /// Writes what `deferredWritesDue` names, in one transaction that is not synced by itself. The driver
    /// calls it as a task of its own after a ready cycle, so the cycle's acknowledgements and answers leave
    /// first; unneeded log rows go a few hundred at a time, each a short pause.
    public func writeDeferred() throws {
        var batch = StorageBatch()
        if historyDue { takeHistory(into: &batch) }
        if database.mayHoldUnneededLogRows { batch.deleteUnneededLogRows = 256 }
        try commit(batch)
    }

    /// Writes the commit indexes still waiting for a write to go with (on stopping).
    public func writeCarried() throws {
        try commit(StorageBatch())
    }

    /// Commits `batch` with any carried commit indexes.
    private func commit(_ batch: StorageBatch) throws {
        var batch = batch
        batch.absorb(earlier: carried)
        carried = StorageBatch()
        carriedDue = false
        try database.commit(batch)
    }

    /// Commits `batch`, or, when it only moves commit indexes and nothing has waited since the last tick,
    /// keeps it to go with the next write.
    private func commitOrCarry(_ batch: StorageBatch) throws {
        guard batch.onlyCommitIndexes, !carriedDue else { return try commit(batch) }
        var later = batch
        later.absorb(earlier: carried)
        carried = later
    }

    /// Writes the history rows applied so far (not synced by itself; see `NodeDatabase.commit`); with
    /// `waitingForTheDisk`, returns once the history store wrote them (on stopping).
    public func flushHistory(waitingForTheDisk: Bool = false) throws {
        try newEvents.writeHistory(to: database)
        ticksSinceHistoryFlush = 0
        if waitingForTheDisk { try database.history.waitForWrites() }
    }

    private func takeHistory(into batch: inout StorageBatch) {
        newEvents.takeHistory(into: &batch)
        ticksSinceHistoryFlush = 0
    }

    /// Whether this node leads `shard` right now.
    public func isLeader(of shard: ShardID) -> Bool { replicas[shard]?.isLeader ?? false }

    /// The edges with sessions in the shard, as this replica has applied it.
    public func edgesWithSessions(shard: ShardID) -> [String] { replicas[shard]?.machine.rooms.edgesWithSessions ?? [] }

    /// A1: counts a client message refused over budget, as `parley_room_commands_total{type="sendMessage",
    /// result="416"}` (it was never proposed, so apply does not count it).
    package func countOverBudget(_ command: RoomCommand) {
        metrics.commandApplied(kind: command.metricKind, errorCode: .sendRateLimited)
    }

    /// A1: the message budget of a room's app, as this replica's state has it.
    package func sendBudget(shard: ShardID, roomId: String) -> SendBudget {
        // The budgets alone: `machine.rooms.sendBudget(forRoom:)` copied the whole state first (issue 35).
        guard let budgets = replicas[shard]?.machine.rooms.sendBudgets else { return SendBudget() }
        return RoomsState.sendBudget(forRoom: roomId, in: budgets)
    }

    /// The shards this node holds a replica of, ascending.
    public var shards: [ShardID] { shardOrder }

    /// Advances every group's logical clock by one tick (elections, heartbeats, quiescence).
    public func tick() {
        for g in groups { g.tick() }
        logMemory.recount(groups)  // whatever changed a log outside its group's cycle is counted within a tick
        due.markAll()
        hostTicks += 1
        if hostTicks % 100 == 0 { try? dropUnfilledReplicas() }
        ticksSinceHistoryFlush += 1
        carriedDue = !carried.writes.isEmpty
    }

    /// Steps messages received from peers into their groups; messages for groups this node does not hold
    /// are dropped (the sender's placement is stale).
    public func receive(_ envelopes: [RaftEnvelope]) {
        for envelope in envelopes {
            guard let i = groupIndex[envelope.group] ?? adopt(envelope) else { continue }
            // A message from an unknown peer or a stale term is dropped by the group itself.
            try? groups[i].raft.step(envelope.message)
            due.mark(i)
        }
    }

    /// The connection to `peer` broke: every group is told, so quiet followers of a dead leader wake up and
    /// leaders probe the peer afresh.
    public func peerUnreachable(_ peer: NodeID) {
        for g in groups { g.raft.reportUnreachable(peer) }
        due.markAll()
    }

    /// A link to `peer` came (back) up: groups that lost their leader campaign now (`RawNode.reportReachable`).
    public func peerReachable(_ peer: NodeID) {
        for g in groups { g.raft.reportReachable(peer) }
        due.markAll()
    }

    /// When the longest-waiting commit index began to wait (nil: none waits).
    public var oldestCommitNotice: ContinuousClock.Instant? { commitNotices.values.min() }

    /// Sends the commit indexes that waited at least `wait` to the followers not yet sent them
    /// (`RawNode.sendCommit()`); the next ready cycle carries the messages. Every cycle does so for those
    /// that waited `config.commitNoticeMillis`.
    public func sendCommitNotices(waitedAtLeast wait: Duration) {
        let now = ContinuousClock.now
        var waited: [GroupID] = []
        for (group, since) in commitNotices where since + wait <= now { waited.append(group) }
        for group in waited {
            commitNotices[group] = nil
            guard let i = groupIndex[group] else { continue }
            groups[i].raft.sendCommit()
            due.mark(i)
        }
    }

    private func nextProposalID() -> ProposalID {
        nextSequence += 1
        return ProposalID(node: config.nodeID, boot: config.boot, sequence: nextSequence)
    }

    /// Proposes a room command to the shard that holds `roomID`. Completes once the command has been applied
    /// on this node (after a quorum made it durable), or at once when this replica cannot take it.
    public func propose(_ command: RoomCommand, roomID: String, actor: CommandActor, timestamp: Int64,
                        completion: @escaping ProposalCompletion) {
        propose(command, shard: config.shardMap.shard(ofRoom: roomID), actor: actor, timestamp: timestamp,
                completion: completion)
    }

    /// Proposes a room command to a given shard (commands that are not about one room, such as a lost edge).
    public func propose(_ command: RoomCommand, shard: ShardID, actor: CommandActor, timestamp: Int64,
                        requestKey: RequestKey? = nil, completion: @escaping ProposalCompletion) {
        propose(.room(command), shard: shard, actor: actor, timestamp: timestamp, requestKey: requestKey) { result in
            completion(result.map { $0.room ?? RoomsState.refusedRequest(.replayed) })
        }
    }

    /// Proposes any shard command — a room's, an IM one for its account (empty for the relay's own), the
    /// webhook outbox's — to `shard`. Completes once it applied on this node (after a quorum made it durable),
    /// or at once when this replica cannot take it (a follower names its leader: only a leader appends).
    public func propose(_ command: ShardCommand, shard: ShardID, actor: CommandActor, timestamp: Int64,
                        requestKey: RequestKey? = nil,
                        completion: @escaping (Result<ShardOutcome, ClusterError>) -> Void) {
        propose(GroupRequest(shard: shard, actor: actor, command: command, requestKey: requestKey), timestamp: timestamp,
                completion: completion)
    }

    /// Proposes a shard request to its shard; `encoded` is its bytes when a peer's call brought it (issue 34: the
    /// entry carries them as they came, once every node reads that form — `writesRequestForm`).
    public func propose(_ request: GroupRequest<ShardCommand>, encoded: [UInt8]? = nil, timestamp: Int64,
                        completion: @escaping (Result<ShardOutcome, ClusterError>) -> Void) {
        let shard = request.shard
        guard let replica = replicas[shard] else { return completion(.failure(.shardNotHere(shard))) }
        due.mark(groupIndex[replica.group]!)
        let form = writesRequestForm
        guard case .room(let room) = request.command else {
            return replica.propose(request, encoded: encoded, requestForm: form, id: nextProposalID(), timestamp: timestamp,
                                   completion: completion)
        }
        let metrics = self.metrics
        let kind = room.metricKind
        replica.propose(request, encoded: encoded, requestForm: form, id: nextProposalID(), timestamp: timestamp) { result in
            // Counted where the proposal was made (the leader), so each command counts once in the cluster.
            if case .success(.room(let outcome)) = result { metrics.commandApplied(kind: kind, errorCode: outcome.errorCode) }
            completion(result)
        }
    }

    /// Issue 19: the shard's IM outbox when this node leads it and it holds effects to relay.
    public func imOutbox(shard: ShardID) -> [OutboxEntry]? {
        guard let r = replicas[shard], r.isLeader, !r.machine.im.outbox.isEmpty else { return nil }
        return r.machine.im.outbox
    }

    /// SPEC W2: the shard's webhook boxes (by app namespace) when this node leads it; nil otherwise.
    public func webhookBoxes(shard: ShardID) -> [String: WebhookOutbox.Box]? {
        guard let r = replicas[shard], r.isLeader else { return nil }
        return r.machine.webhooks.boxes
    }

    /// SPEC D1: the shard's replicated window bound when this node leads it and it differs from this node's
    /// setting; nil otherwise.
    public func historyWindowToSet(shard: ShardID) -> Int? {
        guard let r = replicas[shard], r.isLeader, r.machine.rooms.historyWindowBytes != config.memory.historyWindowBytes
        else { return nil }
        return config.memory.historyWindowBytes
    }

    /// SPEC D1 (issue 38 item 5): the shard's replicated IM log window bound when this node leads it and it
    /// differs from this node's setting; nil otherwise.
    public func imLogWindowToSet(shard: ShardID) -> Int? {
        guard let r = replicas[shard], r.isLeader, r.machine.im.logWindowBytes != config.memory.imLogWindowBytes
        else { return nil }
        return config.memory.imLogWindowBytes
    }

    /// Proposes a change to the meta group (node registry, placement, app credentials).
    public func proposeMeta(_ command: MetaCommand, timestamp: Int64, requestKey: RequestKey? = nil,
                            completion: @escaping (Result<MetaOutcome, ClusterError>) -> Void) {
        proposeMeta(.meta(command, requestKey: requestKey), timestamp: timestamp, completion: completion)
    }

    /// Proposes a meta request; `encoded` is its bytes when a peer's call brought it (as for a shard's).
    public func proposeMeta(_ request: MetaRequest, encoded: [UInt8]? = nil, timestamp: Int64,
                            completion: @escaping (Result<MetaOutcome, ClusterError>) -> Void) {
        guard let meta else { return completion(.failure(.metaNotHere)) }
        due.mark(groupIndex[meta.group]!)
        meta.propose(request, encoded: encoded, requestForm: writesRequestForm, id: nextProposalID(), timestamp: timestamp,
                     completion: completion)
    }

    /// Read your writes for the meta group: `done` runs once this node's meta replica holds every meta command
    /// committed when asked (at once on the leader, or where no replica is held). A meta command proposed on a
    /// follower is refused and applied by the leader, and each node answers app settings and the registry from
    /// its own replica: its caller waits for this before it hears, so what it reads next on this node has it.
    /// `caughtUp`: whether it did (false where no replica is held, or its replica cannot learn the meta leader's
    /// commit now: `GroupReplica.catchUp`).
    public func catchUpMeta(_ done: @escaping (_ caughtUp: Bool) -> Void) {
        guard let meta else { return done(false) }
        due.mark(groupIndex[meta.group]!)
        meta.catchUp(done)
    }

    /// One cycle of the ready loop: collect every group's Ready, make all of it durable in one transaction,
    /// then send the messages, apply the committed entries, answer proposers and publish events.
    /// Returns how many groups had work.
    @discardableResult
    public func processReady() throws -> Int {
        if !commitNotices.isEmpty { sendCommitNotices(waitedAtLeast: .milliseconds(config.commitNoticeMillis)) }
        var batch = StorageBatch()
        var readies: [(index: Int, group: HostedGroup, ready: Ready)] = []
        for i in due.take() {
            let g = groups[i]
            guard let rd = try g.collectReady(into: &batch) else {
                g.log.stage(into: &batch)  // a quiet group's log may be due for a rewrite
                continue
            }
            due.mark(i)  // the next cycle looks again: applying and advancing may leave more, or a snapshot to write
            readies.append((i, g, rd))
            if let soft = rd.softState { observe(soft, group: i) }
            if !rd.committedEntries.isEmpty { metrics.committedEntries.increment(by: rd.committedEntries.count) }
        }
        // A snapshot must not reach the disk before the history rows of the entries it covers: after a crash
        // only the entries behind the snapshot are applied again, and write their rows again. Otherwise rows
        // are written apart from the cycle (`writeDeferred`), never in the way of an acknowledgement.
        if !newEvents.isEmpty, batch.writes.contains(where: { $0.write.snapshot != nil }) {
            takeHistory(into: &batch)
        }
        guard !readies.isEmpty else {
            try commitOrCarry(batch)  // a quiet group's rewrite or snapshot, if any
            return 0
        }
        // A leader's appends and heartbeats leave while this node syncs (`MessageKind.mayLeaveBeforeSync`):
        // the followers' writes overlap the leader's. Acknowledgements and votes wait for the sync.
        // A peer with entries or snapshot bytes to write gets its early ones (all of them, in order: one send,
        // one wake-up) first; a peer with only commit indexes and heartbeats, once the cycle answered: each send
        // wakes a peer's loop, which on a busy machine takes the CPU from this one before the answer is out
        // (issue 35: ~50 µs of a one-writer round trip went to the two commit-index sends ahead of the answer).
        var early: [NodeID: [RaftEnvelope]] = [:]
        var late: [NodeID: [RaftEnvelope]] = [:]
        var withEntries: Set<NodeID> = []
        for (_, g, rd) in readies {
            for m in rd.messages {
                let envelope = RaftEnvelope(group: g.group, message: m)
                if m.kind.mayLeaveBeforeSync {
                    early[m.to, default: []].append(envelope)
                    if !m.entries.isEmpty || m.kind == .snapshot { withEntries.insert(m.to) }
                } else {
                    late[m.to, default: []].append(envelope)
                }
            }
        }
        let earlyPeers = early.keys.sorted()
        for node in earlyPeers where withEntries.contains(node) { send(node, early[node]!) }
        // Committed entries this node already held on disk apply and answer now, not after this cycle's
        // sync: that write is for newer entries, and waiting for it added an fsync to every answer. Only a
        // leader's: a follower answers no writer, and its acknowledgement of the newer entries is what the
        // leader waits for — applying first put the apply (the rooms, the events, the history rows) between
        // reading the append and starting its sync (session 40); `finishReady` applies them after the sync.
        for (_, g, rd) in readies where g.raft.softState.role == .leader { g.applyDurableCommitted(rd) }
        answered()
        for node in earlyPeers where !withEntries.contains(node) { send(node, early[node]!) }
        // Entries, a snapshot, a new term or vote: durable before anything below is sent or answered. A batch
        // with none of them (commit indexes, a quiet group's `log_from`) holds nothing Raft needs on disk
        // first — the commit index is volatile state, relearned from the leader — so it is written after
        // the cycle's answers, out of their way — or, when it only moves commit indexes, with the next write.
        let writeFirst = batch.needsSync
        if writeFirst { try commit(batch) }
        for node in late.keys.sorted() { send(node, late[node]!) }

        // A snapshot waits for the history rows written before it (see above): one by bytes waits until
        // the history thread is idle instead of stopping this loop behind a flush of thousands of rows.
        var rule = config.snapshots
        if database.history.isWriting { rule.everyBytes = .max }
        for (_, g, rd) in readies { try g.finishReady(rd, snapshots: rule) }
        for r in readies { logMemory.relook(r.index, in: groups) }  // D1: the logs this cycle changed
        boundLogMemory()
        if !writeFirst { try commitOrCarry(batch) }
        if readies.contains(where: { $0.group.takeConfigurationChanged() }) {
            // Written above: a replica the group removed can go now, storage and all.
            try writeCarried()
            try dropRemovedReplicas()
        }
        if config.raft.deferCommitNotice {
            // Only a cycle of the group changes what its followers were sent: the others' entries stand.
            var now: ContinuousClock.Instant?
            for (_, g, _) in readies {
                if g.raft.unsentCommit == nil {
                    if !commitNotices.isEmpty { commitNotices[g.group] = nil }
                } else if commitNotices[g.group] == nil {
                    if now == nil { now = .now }
                    commitNotices[g.group] = now
                }
            }
        }
        busyCycles += 1
        if busyCycles % 16 == 0 { try relieveOldestLogPin() }
        return readies.count
    }

    /// SPEC D1: while this host's groups hold more than `memory.raftLogBytes` of entries in memory, the group
    /// holding the most drops the data of its applied entries but its newest few (they stay on disk in its rows
    /// and are read back for a follower that needs them): no snapshot, no write.
    private func boundLogMemory() {
        guard logMemory.total > config.memory.raftLogBytes else { return }
        // Over the bound: every group's figure as it is now, not as last seen, chooses what goes.
        logMemory.recount(groups)
        // What each group keeps must leave room under the bound for every group.
        let keep = min(config.snapshots.keepBytes, config.memory.raftLogBytes / max(1, groups.count) / 2)
        var relieved = 0
        while logMemory.total > config.memory.raftLogBytes, relieved < 8,
              let i = logMemory.largest, logMemory.seen[i] > keep {
            let freed = groups[i].evictLog(keepBytes: keep)
            logMemory.relook(i, in: groups)
            guard freed > 0 else { break }
            relieved += 1
            metrics.logMemoryEvictions.increment()
        }
    }

    /// Of the quiet groups (none of the newest rows, few live bytes) that hold back old log rows, the one
    /// holding back the most writes its live entries again (staged with its next write), so the rows below it
    /// can go. One group at a time: a rewrite is a pause of this loop. A busy group frees its rows itself when
    /// it snapshots (every `snapshots.everyBytes`); it used to be made to snapshot here, and those snapshots,
    /// one after another once the table was full, more than halved the throughput of a long run at 1000
    /// clients. Busy groups with under `logRewriteMaxBytes` of log were rewritten until session 9: all of
    /// them, one after another, ever larger copies that freed nothing, once the table held `rewriteAfterRows`
    /// rows — a third more CPU per command from the second minute of a run at 64 clients.
    private func relieveOldestLogPin() throws {
        let quiet = groups.filter {
            $0.log.isQuiet && $0.log.bytesSinceSnapshot <= config.logRewriteMaxBytes && $0.log.pinsOldRows
        }
        guard let g = quiet.min(by: { $0.log.oldestNeededRow < $1.log.oldestNeededRow }) else { return }
        if try g.log.rewriteLiveEntries(maxBytes: config.logRewriteMaxBytes) { due.mark(groupIndex[g.group]!) }
    }

    private func observe(_ soft: SoftState, group i: Int) {
        if soft.role == .candidate { metrics.electionsStarted.increment() }
        if soft.leader != 0, soft.leader != knownLeaders[i] { metrics.leaderChanges.increment() }
        knownLeaders[i] = soft.leader
        if let shard = config.shardMap.shard(ofGroup: groups[i].group) { leaderSeen(shard, soft.leader) }
    }

    /// Proposals waiting to be applied, over all groups.
    public var pendingProposals: Int { replicas.values.reduce(meta?.pendingCount ?? 0) { $0 + $1.pendingCount } }

    // MARK: Observation

    /// The leader this node knows of for `shard` (0 = none known), or nil when no replica is held here.
    public func leader(of shard: ShardID) -> NodeID? { replicas[shard]?.leader }

    /// The nodes that hold `shard`'s replicas: the voters its replica here has applied, else the meta
    /// placement table (this node's meta replica, or the copy the driver last fetched), else the static
    /// placement of `nodes`.
    public func replicaNodes(of shard: ShardID) -> [NodeID] {
        if let r = replicas[shard], !r.confState.voters.isEmpty { return config.shardMap.ranked(shard, r.confState.voters) }
        if let table = meta?.machine.placement ?? placementHint, shard < table.count, !table[shard].isEmpty {
            return table[shard]
        }
        return config.shardMap.replicas(of: shard, nodes: config.nodes)
    }

    /// The meta leader this node knows of (0 = none known), or nil when it holds no meta replica.
    public var metaLeader: NodeID? { meta?.leader }

    /// Every member of the meta group as this node's replica applied it (empty when it holds none).
    public var metaMembers: [NodeID] { meta?.confState.allMembers ?? [] }

    /// The meta state as this node's replica has applied it (nil when it holds no meta replica).
    public var metaState: MetaState? { meta?.machine }

    /// The rooms state of a shard replica as bytes (tests compare replicas with it).
    public func roomsSnapshot(shard: ShardID) -> [UInt8]? { replicas[shard]?.machine.snapshot() }
}
