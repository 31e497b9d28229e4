import ParleyRaft
import ParleyPlacement

/// What `/status` shows of this host's shard replicas.
extension RaftHost {
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
        public var conf: ConfState
        /// Issue 19: IM effects this shard produced that its targets have not confirmed (the relay's backlog).
        public var imPending: Int
        /// Users and teams with IM state here.
        public var imUsers: Int
        public var imTeams: Int
        /// SPEC D1: bytes of Raft log entries, of recent events for the feeds, and of the rooms' recent-history
        /// windows this replica holds in memory.
        public var logBytes: Int
        public var feedBytes: Int
        public var windowBytes: Int
        /// The shard's replicated bound on its rooms' windows (0: none).
        public var windowBound: Int
        /// Issue 38 item 5: the IM logs' items in memory, and the shard's replicated bound on them (0: none).
        public var imLogBytes: Int
        public var imLogBound: Int
    }

    public func status() -> [ShardStatus] {
        shardOrder.map { shard in
            let r = replicas[shard]!
            let s = r.raft.status
            return ShardStatus(shard: shard, role: s.softState.role, term: s.hardState.term, leader: s.softState.leader,
                               commit: s.hardState.commit, applied: r.applied, firstIndex: s.firstIndex,
                               lastIndex: s.lastIndex, snapshotIndex: r.snapshotIndex, rooms: r.machine.rooms.roomCount,
                               isQuiesced: s.isQuiesced, conf: r.confState, imPending: r.machine.im.outbox.count,
                               imUsers: r.machine.im.users.count, imTeams: r.machine.im.teams.count,
                               logBytes: r.logBytesHeld, feedBytes: eventLogs[shard]?.bytes ?? 0,
                               windowBytes: r.machine.rooms.windowBytes,
                               windowBound: r.machine.rooms.historyWindowBytes,
                               imLogBytes: r.machine.im.logWindowBytesHeld, imLogBound: r.machine.im.logWindowBytes)
        }
    }
}
