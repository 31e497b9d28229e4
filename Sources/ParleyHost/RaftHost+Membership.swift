import ParleyRaft
import ParleyRooms
import ParleyStorage
import ParleyRaftWire
import ParleyShardState
import ParleyPlacement

/// Issue 17: shard replicas that come and go while the node runs. A replica is created when its group's
/// leader first reaches this node (the group added it as a learner), starts empty, and is filled by a
/// snapshot that names it; it is dropped, storage and all, once it applies a configuration without it.
extension RaftHost {
    /// Every group's Raft settings: the template with this node's id and a seed of its own.
    static func raftConfig(_ group: GroupID, _ config: Config) -> RaftConfig {
        var raft = config.raft
        raft.id = config.nodeID
        raft.randomSeed = StableHash.mix(config.nodeID &* 0x1_0000_0001 ^ group ^ config.boot << 32)
        // `forwardProposals` stays off: only a leader appends (`GroupReplica.propose`); a follower answers
        // "not leader" with the leader's name, and the driver calls the leader (issue 34, one road).
        return raft
    }

    /// One shard replica over `log`, wired to the host's history store and its event log (the edges' feeds).
    static func makeShardReplica(_ shard: ShardID, log: DurableGroupLog, config: Config, database: NodeDatabase,
                                 scratch: ApplyScratch, historyPages: HistoryPages,
                                 events eventLogs: inout [ShardID: ShardEventLog]) throws -> GroupReplica<ShardState> {
        let group = config.shardMap.group(of: shard)
        let limits = config.limits
        let replica = try GroupReplica<ShardState>(
            group: group, log: log, config: raftConfig(group, config),
            prepare: {
                $0.rooms.collectsStoredHistory = true
                $0.collectsStoredImItems = true
            }) { ShardState(rooms: RoomsState(limits: limits)) }
        let imFeed = ImFeedBuffer()
        replica.afterApply = { state in
            imFeed.events += state.takeImFeed()
            for s in state.rooms.takeStoredHistory() {
                scratch.add(RoomHistoryStore.Row(shard: shard, roomId: s.roomId, item: s.item))
            }
            for i in state.takeStoredImItems() {
                scratch.add(ImLogRow(shard: shard, owner: i.owner.storeKey, seq: i.seq, time: i.time, bytes: i.bytes))
            }
        }
        replica.finishAnswer = { command, outcome, state, context in
            let writeWaitingRows = { try scratch.writeHistory(to: database) }
            if case .room(let c) = command, case .room(let o) = outcome,
               let read = RoomHistoryRead.plan(c, o, state: state.rooms, now: context.timestamp) {
                return { deliver in
                    historyPages.finish(read.complete, fallback: read.fallback, writeWaitingRows: writeWaitingRows) { deliver(.room($0)) }
                }
            }
            guard let read = ImLogRead.plan(command, outcome, state: state, context: context) else { return nil }
            return { deliver in historyPages.finish(read.complete, fallback: read.fallback, writeWaitingRows: writeWaitingRows, deliver: deliver) }
        }
        let events = ShardEventLog(applied: replica.applied, maxBytes: config.memory.feedBytesPerShard)
        replica.onApplied = { index, outcomes in
            let list = outcomes.count == 1 ? outcomes[0].roomEvents : outcomes.flatMap(\.roomEvents)
            let im = imFeed.events
            imFeed.events.removeAll()
            events.applied(index, list, im: im)
            if !list.isEmpty || !im.isEmpty { scratch.shards.insert(shard) }
        }
        replica.onRestored = { index in events.restored(at: index) }
        eventLogs[shard] = events
        return replica
    }

    /// The IM feed events of the commands of the entry being applied, until the entry's `onApplied`.
    final class ImFeedBuffer {
        var events: [ImFeedEvent] = []
    }

    /// Ticks after dropping a replica during which its old leader's late messages are ignored.
    static let retiredTicks: UInt64 = 200
    /// Ticks an empty replica may wait for the snapshot that fills it before it is dropped.
    static let unfilledTicks: UInt64 = 1_200

    /// A message for a shard group this node holds no replica of. A leader's append, heartbeat or snapshot
    /// means the group counts this node as a member: an empty replica is made for it (the leader then sends
    /// a snapshot). Anything else, and anything for a replica dropped here moments ago, is ignored. A stale
    /// leader's message can still make one the group does not want; no snapshot ever fills it, and
    /// `dropUnfilledReplicas` removes it.
    func adopt(_ envelope: RaftEnvelope) -> Int? {
        let group = envelope.group
        let shard = config.shardMap.shard(ofGroup: group)
        guard shard != nil || (group == ShardMap.metaGroup && meta == nil) else { return nil }
        guard config.partition.holds(group: group, shardMap: config.shardMap) else { return nil }
        if let retired = retiredGroups[group], hostTicks - retired < Self.retiredTicks { return nil }
        switch envelope.message.kind {
        case .append, .heartbeat, .snapshot: break
        default: return nil
        }
        do {
            let log = try database.createEmptyGroup(group)
            if let shard {
                let replica = try Self.makeShardReplica(shard, log: log, config: config, database: database,
                                                        scratch: newEvents, historyPages: historyPages, events: &eventLogs)
                replicas[shard] = replica
                metrics.watch(replica)
            } else {
                let replica = try GroupReplica<MetaState>(group: group, log: log, config: Self.raftConfig(group, config)) {
                    MetaState()
                }
                metrics.watch(replica)
                meta = replica
            }
            retiredGroups[group] = nil
            adoptedGroups[group] = hostTicks
            regroup()
            metrics.replicasAdded.increment()
            return groupIndex[group]
        } catch {
            return nil
        }
    }

    /// Drops the replicas whose applied configuration no longer names this node: the group removed it.
    /// Runs after a cycle's write, so nothing of theirs is still to be written.
    func dropRemovedReplicas() throws {
        var gone: [GroupID] = []
        for g in groups {
            let conf = g.confState
            if !conf.voters.isEmpty { adoptedGroups[g.group] = nil }
            if !conf.voters.isEmpty && !conf.allMembers.contains(config.nodeID) { gone.append(g.group) }
        }
        try drop(gone)
    }

    /// Drops empty replicas no snapshot filled in `unfilledTicks` (made for a stale leader's message).
    func dropUnfilledReplicas() throws {
        try drop(groups.filter { g in
            adoptedGroups[g.group].map { hostTicks - $0 >= Self.unfilledTicks } == true && g.confState.voters.isEmpty
        }.map(\.group))
    }

    /// The groups held here that the placement no longer puts on this node and that do not lead: a replica
    /// the group removed may never apply its own removal (the leader stops sending to it), so the driver asks
    /// the group's leader whether it still counts this one (`RaftDriver.collectRemovedReplicas`).
    package func replicasOutsidePlacement(table: [[NodeID]], metaTarget: [NodeID]) -> [GroupID] {
        var out: [GroupID] = []
        if table.count == config.shardMap.shardCount {
            for shard in shardOrder where !table[shard].contains(config.nodeID) && replicas[shard]?.isLeader == false {
                out.append(config.shardMap.group(of: shard))
            }
        }
        if !metaTarget.isEmpty, !metaTarget.contains(config.nodeID), let meta, !meta.isLeader { out.append(meta.group) }
        return out
    }

    /// The members of `group` as this replica applied them, and whether it leads (nil: not held here).
    public func members(of group: GroupID) -> (leads: Bool, members: [NodeID])? {
        guard let i = groupIndex[group] else { return nil }
        let g = groups[i]
        return (g.raft.softState.role == .leader, g.confState.allMembers)
    }

    /// Drops a replica its group's leader says the group no longer counts.
    public func dropReplica(_ group: GroupID) throws {
        guard groupIndex[group] != nil else { return }
        try drop([group])
    }

    private func drop(_ gone: [GroupID]) throws {
        guard !gone.isEmpty else { return }
        try writeCarried()
        for group in gone {
            let rows = groupIndex[group].map { groups[$0].log.heldRows } ?? []
            adoptedGroups[group] = nil
            if let shard = config.shardMap.shard(ofGroup: group) {
                replicas.removeValue(forKey: shard)?.abandonPending()
                eventLogs[shard] = nil
            } else if group == ShardMap.metaGroup {
                meta?.abandonPending()
                meta = nil
            }
            retiredGroups[group] = hostTicks
            try database.dropGroup(group, rows: rows)
            metrics.replicasRemoved.increment()
        }
        regroup()
    }

    /// Rebuilds the group list and its index after a replica came or went; every group is looked at next.
    private func regroup() {
        let shards = replicas.keys.sorted()
        var all: [HostedGroup] = shards.map { replicas[$0]! }
        if let meta { all.append(meta) }
        var leaders: [GroupID: NodeID] = [:]
        for (i, g) in groups.enumerated() { leaders[g.group] = knownLeaders[i] }
        shardOrder = shards
        groups = all
        groupIndex = Dictionary(uniqueKeysWithValues: all.enumerated().map { ($1.group, $0) })
        knownLeaders = all.map { leaders[$0.group] ?? $0.raft.softState.leader }
        due = DueGroups(count: all.count)
        due.markAll()
    }

    // MARK: Driving a group's membership (the leader's side)

    /// A shard replica's membership as its leader sees it, for `ReplicaMoves`.
    public typealias Membership = ReplicaMoves.Membership

    /// The meta group in `moveReplicas`' answers.
    public static let metaShard: ShardID = -1

    /// The membership of every shard this node leads.
    public func ledMemberships() -> [Membership] {
        shardOrder.compactMap { shard in replicas[shard].flatMap { $0.isLeader ? membership(of: $0, shard: shard) : nil } }
    }

    private func membership<M>(of r: GroupReplica<M>, shard: ShardID) -> Membership {
        Membership(shard: shard, leader: r.raft, conf: r.confState)
    }

    /// One step toward `table` (the meta placement: each shard's wanted replicas) on every shard this node
    /// leads (`ReplicaMoves`). At most `maxLearners` of them may have a replica catching up at once, so a
    /// node sends few snapshots at a time. Returns the steps taken, for logs and tests.
    @discardableResult
    public func moveReplicas(toward table: [[NodeID]], meta metaTarget: [NodeID] = [],
                             maxLearners: Int) -> [(ShardID, ReplicaMoves.Step)] {
        var taken: [(ShardID, ReplicaMoves.Step)] = []
        // The meta group moves the same way, toward the first nodes of its own rendezvous order.
        if !metaTarget.isEmpty, let meta, meta.isLeader {
            let step = ReplicaMoves.next(leader: config.nodeID, membership: membership(of: meta, shard: Self.metaShard),
                                         target: metaTarget)
            if take(step, on: meta) { taken.append((Self.metaShard, step)) }
        }
        guard table.count == config.shardMap.shardCount else { return taken }
        let led = ledMemberships()
        var learning = led.filter { !$0.conf.learners.isEmpty }.count
        for m in led {
            let step = ReplicaMoves.next(leader: config.nodeID, membership: m, target: table[m.shard],
                                         mayAddLearner: learning < maxLearners)
            guard let r = replicas[m.shard], take(step, on: r) else { continue }
            if case .addLearner = step { learning += 1 }
            taken.append((m.shard, step))
        }
        return taken
    }

    /// Carries out one step on a group this node leads; false when there is nothing to do or Raft refused.
    func take<M>(_ step: ReplicaMoves.Step, on r: GroupReplica<M>) -> Bool {
        switch step {
        case .none, .wait:
            return false
        case .transferLeadership(let heir):
            guard r.isLeader, r.confState.voters.contains(heir), heir != config.nodeID else { return false }
            r.raft.transferLeadership(to: heir)
            metrics.leadershipTransfersStarted.increment()
        default:
            guard let change = step.change, r.isLeader, (try? r.raft.proposeConfChange(change)) != nil else { return false }
            metrics.membershipChanges.increment()
        }
        due.mark(groupIndex[r.group]!)
        return true
    }
}

// MARK: Moves in progress, for /status

extension RaftHost {
    /// A group this node leads whose membership is not yet what the placement wants.
    public struct MoveStatus: Sendable, Hashable {
        /// A learner catching up: from a snapshot (bytes acknowledged of the snapshot's size) or from the log.
        public struct Learner: Sendable, Hashable {
            public var node: NodeID
            public var match: LogIndex
            public var bySnapshot: Bool
            public var snapshotBytesAcked: UInt64
            public var snapshotBytes: UInt64
        }

        /// `RaftHost.metaShard` for the meta group.
        public var shard: ShardID
        public var target: [NodeID]
        public var conf: ConfState
        public var commit: LogIndex
        /// The step the move takes next, or why it waits.
        public var step: String
        public var learners: [Learner]
    }

    /// Every move under way in the groups this node leads, toward `table` (and `metaTarget` for the meta
    /// group), with the step each takes next under a budget of `maxLearners` replicas catching up.
    public func movesInProgress(table: [[NodeID]], metaTarget: [NodeID], maxLearners: Int) -> [MoveStatus] {
        var out: [MoveStatus] = []
        let led = ledMemberships()
        let learning = led.filter { !$0.conf.learners.isEmpty }.count
        func look<M>(_ r: GroupReplica<M>, _ m: Membership, _ target: [NodeID]) {
            let conf = m.conf
            guard !target.isEmpty, conf.isJoint || !conf.learners.isEmpty || Set(conf.voters) != Set(target) else { return }
            let step = ReplicaMoves.next(leader: config.nodeID, membership: m, target: target,
                                         mayAddLearner: learning < maxLearners || !conf.learners.isEmpty)
            let status = r.raft.status
            let size = UInt64((try? r.log.snapshot().data.count) ?? 0)
            let learners = conf.learners.map { n -> MoveStatus.Learner in
                let p = status.progress[n]
                let bySnapshot = p?.state == .snapshot
                return MoveStatus.Learner(node: n, match: p?.match ?? 0, bySnapshot: bySnapshot,
                                          snapshotBytesAcked: bySnapshot ? p?.snapshotAckedBytes ?? 0 : 0,
                                          snapshotBytes: bySnapshot ? size : 0)
            }
            out.append(MoveStatus(shard: m.shard, target: target.sorted(), conf: conf, commit: m.commit,
                                  step: "\(step)", learners: learners))
        }
        if !metaTarget.isEmpty, let meta, meta.isLeader {
            look(meta, membership(of: meta, shard: Self.metaShard), metaTarget)
        }
        if table.count == config.shardMap.shardCount {
            for m in led { if let r = replicas[m.shard] { look(r, m, table[m.shard]) } }
        }
        return out
    }
}
