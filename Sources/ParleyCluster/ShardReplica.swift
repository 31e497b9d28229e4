import ParleyRaft
import ParleyRooms
import ParleyStorage

/// One shard's replica on this node: its Raft node, its durable log and the rooms state it applies to.
final class ShardReplica {
    let shard: ShardID
    let group: GroupID
    let raft: RawNode
    let log: DurableGroupLog
    private(set) var rooms: RoomsState
    private(set) var applied: LogIndex
    /// Entry time never goes backwards, even when proposers' clocks disagree.
    private(set) var lastTimestamp: Int64 = 0
    private(set) var confState: ConfState
    /// Where the last local snapshot was taken.
    private(set) var snapshotIndex: LogIndex

    init(shard: ShardID, group: GroupID, log: DurableGroupLog, config: RaftConfig, limits: RoomLimits) throws {
        self.shard = shard
        self.group = group
        self.log = log
        let snapshot = try log.snapshot()
        if snapshot.data.isEmpty {
            rooms = RoomsState(limits: limits)
        } else {
            (rooms, lastTimestamp) = try Self.restore(snapshot.data)
        }
        applied = snapshot.metadata.index
        snapshotIndex = snapshot.metadata.index
        confState = snapshot.metadata.confState
        var config = config
        config.applied = applied
        raft = try RawNode(config: config, storage: log)
    }

    /// A shard snapshot is the entry clock followed by the rooms state, so a replica restored from it
    /// continues exactly as one that applied the log.
    private static func restore(_ data: [UInt8]) throws -> (RoomsState, Int64) {
        do {
            var r = ByteReader(data)
            let clock = try r.readInt64()
            return (try RoomsState(restoring: Array(data.suffix(r.remaining))), clock)
        } catch {
            throw ClusterError.snapshotUnreadable("\(error)")
        }
    }

    func snapshotData() -> [UInt8] {
        var w = ByteWriter()
        w.write(lastTimestamp)
        return w.bytes + rooms.snapshot()
    }

    var isLeader: Bool { raft.status.softState.role == .leader }
    var leader: NodeID { raft.status.softState.leader }

    /// Makes a snapshot received from the leader this replica's state.
    func restore(from snapshot: Snapshot) throws {
        (rooms, lastTimestamp) = try Self.restore(snapshot.data)
        applied = snapshot.metadata.index
        snapshotIndex = snapshot.metadata.index
        confState = snapshot.metadata.confState
    }

    /// Applies one committed entry; returns the proposal it carried and what applying it did, or nil for
    /// entries without a room command (the leader's empty entry, membership changes, undecodable bytes —
    /// which every replica skips alike).
    func apply(_ entry: Entry) -> (ShardProposal, ApplyOutcome)? {
        precondition(entry.index == applied + 1, "shard \(shard): applying \(entry.index) after \(applied)")
        applied = entry.index
        switch entry.kind {
        case .confChange:
            if let cc = try? ConfChange(decoding: entry.data) { confState = raft.applyConfChange(cc) }
            return nil
        case .normal:
            guard !entry.data.isEmpty, let proposal = try? ShardProposal(decoding: entry.data) else { return nil }
            lastTimestamp = max(lastTimestamp, proposal.timestamp)
            let context = ApplyContext(logIndex: entry.index, timestamp: lastTimestamp, actor: proposal.actor)
            return (proposal, rooms.apply(proposal.command, context: context))
        }
    }

    /// Takes a snapshot of the rooms state when the log has grown by `every` entries since the last one,
    /// keeping `keep` entries behind it for followers that are only a little behind.
    func snapshotIfDue(every: LogIndex, keep: LogIndex) throws {
        guard applied >= snapshotIndex + every else { return }
        try log.createSnapshot(at: applied, confState: confState, data: snapshotData())
        snapshotIndex = applied
        let first = try log.firstIndex()
        if applied > keep, applied - keep > first { try log.compact(upTo: applied - keep) }
    }
}
