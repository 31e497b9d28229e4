import ParleyRaft
import ParleyRooms
import ParleyStorage

/// A Raft message for one group, as nodes exchange them.
public struct RaftEnvelope: Sendable, Hashable {
    public var group: GroupID
    public var message: Message

    public init(group: GroupID, message: Message) {
        self.group = group
        self.message = message
    }
}

/// What a proposer hears back: what applying its command did, or why it could not be applied.
public typealias ProposalCompletion = (Result<ApplyOutcome, ClusterError>) -> Void

/// The multi-Raft host of one node: every shard replica the node holds, driven by one tick, one ready loop
/// and one group commit per cycle. Single-threaded by design; the node runtime serializes calls to it,
/// and tests drive it directly with no clock and no network.
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
        /// Take a shard snapshot after this many applied entries, keeping `snapshotKeep` entries behind it.
        public var snapshotEvery: LogIndex = 10_000
        public var snapshotKeep: LogIndex = 1_000

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
    private let database: NodeDatabase
    /// Replicas by shard, in shard order (the ready loop walks them in a stable order).
    private var replicas: [ShardID: ShardReplica] = [:]
    private let shardOrder: [ShardID]
    private var pending: [ProposalID: (shard: ShardID, term: Term, completion: ProposalCompletion)] = [:]
    private var nextSequence: UInt64 = 0
    private let send: (NodeID, [RaftEnvelope]) -> Void
    private let publish: (ShardID, [RoomEvent]) -> Void

    /// Opens (or, on first start, creates) every shard replica placed on this node.
    /// - Parameters:
    ///   - send: hands one peer the cycle's messages for it (all groups in one batch).
    ///   - publish: receives the room events of each applied batch, per shard, in log order.
    public init(config: Config, database: NodeDatabase,
                send: @escaping (NodeID, [RaftEnvelope]) -> Void,
                publish: @escaping (ShardID, [RoomEvent]) -> Void) throws {
        self.config = config
        self.database = database
        self.send = send
        self.publish = publish
        let held = Set(try database.groupIDs())
        var order: [ShardID] = []
        for shard in 0..<config.shardMap.shardCount {
            let members = config.shardMap.replicas(of: shard, nodes: config.nodes)
            guard members.contains(config.nodeID) else { continue }
            let group = config.shardMap.group(of: shard)
            let log = held.contains(group) ? try database.openGroup(group)
                                           : try database.createGroup(group, bootstrap: ConfState(voters: members))
            var raft = config.raft
            raft.id = config.nodeID
            raft.randomSeed = StableHash.mix(config.nodeID &* 0x1_0000_0001 ^ group ^ config.boot << 32)
            replicas[shard] = try ShardReplica(shard: shard, group: group, log: log, config: raft, limits: config.limits)
            order.append(shard)
        }
        shardOrder = order
    }

    /// The shards this node holds a replica of, ascending.
    public var shards: [ShardID] { shardOrder }

    /// Advances every group's logical clock by one tick (elections, heartbeats, quiescence).
    public func tick() {
        for shard in shardOrder { replicas[shard]!.raft.tick() }
    }

    /// Steps messages received from peers into their groups; messages for groups this node does not hold
    /// are dropped (the sender's placement is stale).
    public func receive(_ envelopes: [RaftEnvelope]) {
        for envelope in envelopes {
            guard let shard = config.shardMap.shard(ofGroup: envelope.group), let replica = replicas[shard] else { continue }
            try? replica.raft.step(envelope.message)  // a message from an unknown peer or a stale term is dropped
        }
    }

    /// The connection to `peer` broke: every group is told, so quiet followers of a dead leader wake up and
    /// leaders probe the peer afresh.
    public func peerUnreachable(_ peer: NodeID) {
        for shard in shardOrder { replicas[shard]!.raft.reportUnreachable(peer) }
    }

    /// Proposes a room command to the shard that holds `roomID`. Completes once the command has been applied
    /// on this node (after a quorum made it durable), or at once when this replica cannot take it.
    public func propose(_ command: RoomCommand, roomID: String, actor: CommandActor, timestamp: Int64,
                        completion: @escaping ProposalCompletion) {
        let shard = config.shardMap.shard(ofRoom: roomID)
        propose(command, shard: shard, actor: actor, timestamp: timestamp, completion: completion)
    }

    /// Proposes a command to a given shard (commands that are not about one room, such as a lost edge).
    public func propose(_ command: RoomCommand, shard: ShardID, actor: CommandActor, timestamp: Int64,
                        completion: @escaping ProposalCompletion) {
        guard let replica = replicas[shard] else { return completion(.failure(.shardNotHere(shard))) }
        guard replica.isLeader else { return completion(.failure(.notLeader(shard: shard, leader: replica.leader))) }
        nextSequence += 1
        let id = ProposalID(node: config.nodeID, boot: config.boot, sequence: nextSequence)
        let proposal = ShardProposal(id: id, timestamp: timestamp, actor: actor, command: command)
        do {
            try replica.raft.propose(proposal.encoded())
        } catch let error as RaftError {
            switch error {
            case .notLeader(let leader): return completion(.failure(.notLeader(shard: shard, leader: leader)))
            default: return completion(.failure(.proposalRefused("\(error)")))
            }
        } catch {
            return completion(.failure(.proposalRefused("\(error)")))
        }
        pending[id] = (shard, replica.raft.status.hardState.term, completion)
    }

    /// One cycle of the ready loop: collect every group's Ready, make all of it durable in one transaction,
    /// then send the messages, apply the committed entries, answer proposers and publish events.
    /// Returns how many groups had work.
    @discardableResult
    public func processReady() throws -> Int {
        var batch = StorageBatch()
        var readies: [(ShardReplica, Ready)] = []
        var termBefore: [ShardID: Term] = [:]
        for shard in shardOrder {
            let replica = replicas[shard]!
            guard replica.raft.hasReady else { continue }
            termBefore[shard] = replica.log.hardState.term
            let rd = replica.raft.ready()
            if let snapshot = rd.snapshot, !snapshot.isEmpty {
                try replica.log.applySnapshot(snapshot)
                try replica.restore(from: snapshot)
            }
            try replica.log.append(rd.entries)
            if let hs = rd.hardState { replica.log.setHardState(hs) }
            replica.log.stage(into: &batch)
            readies.append((replica, rd))
        }
        guard !readies.isEmpty else { return 0 }
        try database.commit(batch)  // nothing below is sent or answered before this is durable

        var outbox: [NodeID: [RaftEnvelope]] = [:]
        for (replica, rd) in readies {
            for m in rd.messages { outbox[m.to, default: []].append(RaftEnvelope(group: replica.group, message: m)) }
        }
        for node in outbox.keys.sorted() { send(node, outbox[node]!) }

        for (replica, rd) in readies {
            var events: [RoomEvent] = []
            for entry in rd.committedEntries {
                guard let (proposal, outcome) = replica.apply(entry) else { continue }
                events.append(contentsOf: outcome.events)
                if let waiting = pending.removeValue(forKey: proposal.id) { waiting.completion(.success(outcome)) }
            }
            if !events.isEmpty { publish(replica.shard, events) }
            replica.raft.advance(rd)
            // Only a change of role or term can orphan a proposal.
            if rd.softState != nil || rd.hardState.map({ $0.term != termBefore[replica.shard] }) == true {
                failProposalsOrphaned(in: replica)
            }
            try replica.snapshotIfDue(every: config.snapshotEvery, keep: config.snapshotKeep)
        }
        return readies.count
    }

    /// A proposal made in an earlier term, or on a replica that is no longer leader, may never apply
    /// (a new leader can overwrite it): its caller is told the outcome is unknown rather than left waiting.
    private func failProposalsOrphaned(in replica: ShardReplica) {
        let term = replica.raft.status.hardState.term
        let stillLeader = replica.isLeader
        let orphaned = pending.filter { $0.value.shard == replica.shard && (!stillLeader || $0.value.term < term) }
        for id in orphaned.keys.sorted(by: { $0.sequence < $1.sequence }) {
            pending.removeValue(forKey: id)!.completion(.failure(.outcomeUnknown))
        }
    }

    /// The leader this node knows of for `shard` (0 = none known), or nil when no replica is held here.
    public func leader(of shard: ShardID) -> NodeID? { replicas[shard]?.leader }

    /// The nodes that hold `shard`'s replicas, best first.
    public func replicaNodes(of shard: ShardID) -> [NodeID] {
        config.shardMap.replicas(of: shard, nodes: config.nodes)
    }

    /// Proposals waiting to be applied.
    public var pendingProposals: Int { pending.count }

    // MARK: Observation

    /// What `/status` shows of one shard replica.
    public struct ShardStatus: Sendable, Hashable {
        public var shard: ShardID
        public var role: Role
        public var term: Term
        public var leader: NodeID
        public var commit: LogIndex
        public var applied: LogIndex
        public var firstIndex: LogIndex
        public var lastIndex: LogIndex
        public var snapshotIndex: LogIndex
        public var rooms: Int
        public var isQuiesced: Bool
    }

    public func status() -> [ShardStatus] {
        shardOrder.map { shard in
            let r = replicas[shard]!
            let s = r.raft.status
            return ShardStatus(shard: shard, role: s.softState.role, term: s.hardState.term, leader: s.softState.leader,
                               commit: s.hardState.commit, applied: r.applied, firstIndex: s.firstIndex,
                               lastIndex: s.lastIndex, snapshotIndex: r.snapshotIndex, rooms: r.rooms.roomIds.count,
                               isQuiesced: s.isQuiesced)
        }
    }

    /// The rooms state of a shard replica as bytes (tests compare replicas with it).
    public func roomsSnapshot(shard: ShardID) -> [UInt8]? { replicas[shard]?.rooms.snapshot() }
}
