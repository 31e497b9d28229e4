/// The kinds of messages Raft peers exchange.
public enum MessageKind: UInt8, Sendable, CaseIterable {
    case append, appendResponse, vote, voteResponse, preVote, preVoteResponse
    case heartbeat, heartbeatResponse
    /// One chunk of a snapshot (see `Message.snapshotOffset`).
    case snapshot
    /// A follower's acknowledgement of the snapshot bytes it holds.
    case snapshotResponse
    /// Tells the transferee to campaign at once (leadership transfer).
    case timeoutNow
    /// A follower forwards a read request to the leader; the leader answers with the read index.
    case readIndex, readIndexResponse
    /// A follower forwards a leadership transfer request to the leader.
    case transferLeader
    /// A follower forwards proposals (unindexed normal entries) to the leader (`RaftConfig.forwardProposals`).
    case propose
}

extension MessageKind {
    /// A leader's appends, heartbeats and snapshot chunks claim nothing about the sender's disk, so a host may
    /// send them while the Ready that produced them is still being synced (Raft thesis §10.2.1: the leader
    /// writes its log in parallel with replicating it). Everything else — acknowledgements, votes, candidacies,
    /// transfer and read traffic — leaves only once that Ready is durable.
    ///
    /// Safe because the leader's commit index only moves when a follower's acknowledgement is stepped, and a
    /// host steps nothing until the Ready whose entries were acknowledged is durable and advanced; so every
    /// commit index a message carries counts only entries on the leader's disk.
    public var mayLeaveBeforeSync: Bool {
        switch self {
        case .append, .heartbeat, .snapshot, .propose: true
        default: false
        }
    }
}

/// A message between two members of one group.
///
/// Snapshot chunking: a `.snapshot` message carries in `snapshot` the metadata and the bytes
/// `[snapshotOffset, snapshotOffset + snapshot.data.count)` of a snapshot that is `snapshotTotalBytes`
/// long. The follower answers `.snapshotResponse` with `index` = the snapshot's index and
/// `snapshotOffset` = how many leading bytes of that snapshot it holds (`reject` when the chunk did not
/// fit, e.g. a gap); the leader continues from that offset. When the follower holds the whole snapshot
/// it restores it and answers with an ordinary `.appendResponse`.
public struct Message: Sendable, Hashable {
    public var kind: MessageKind
    public var from: NodeID
    public var to: NodeID
    /// The sender's term (0 on requests forwarded to the leader; the requested term on vote traffic).
    public var term: Term
    /// Term of the entry at `index` (append: the entry before `entries`; vote: the candidate's last term).
    public var logTerm: Term
    /// Append: index of the entry before `entries`; append response: last index held; vote: the
    /// candidate's last index; heartbeat and its response: the leader's tick stamp (lease clock);
    /// read index response: the read index; snapshot response: the snapshot's index.
    public var index: LogIndex
    public var entries: [Entry]
    /// The sender's commit index (append, heartbeat).
    public var commit: LogIndex
    public var reject: Bool
    /// On a rejected append: the last index where the follower's log may match the leader's.
    public var rejectHint: LogIndex
    /// Opaque request context (read index requests and the heartbeats that confirm them).
    public var context: [UInt8]
    public var snapshot: Snapshot?
    /// Offset of this chunk in the snapshot's data (`.snapshot`), or bytes held (`.snapshotResponse`).
    public var snapshotOffset: UInt64
    /// Total size of the snapshot's data (`.snapshot`).
    public var snapshotTotalBytes: UInt64
    /// On a heartbeat: the leader goes quiet after this one; on its response: an echo, which does not
    /// wake the quiesced leader.
    public var quiesce: Bool
    /// On a vote request: the campaign was started by a leadership transfer, so the leader lease is ignored.
    public var campaignTransfer: Bool
    /// On `.transferLeader`: the node leadership should go to.
    public var transferee: NodeID

    public init(kind: MessageKind, from: NodeID = 0, to: NodeID = 0, term: Term = 0, logTerm: Term = 0,
                index: LogIndex = 0, entries: [Entry] = [], commit: LogIndex = 0, reject: Bool = false,
                rejectHint: LogIndex = 0, context: [UInt8] = [], snapshot: Snapshot? = nil,
                snapshotOffset: UInt64 = 0, snapshotTotalBytes: UInt64 = 0, quiesce: Bool = false,
                campaignTransfer: Bool = false, transferee: NodeID = 0) {
        self.kind = kind
        self.from = from
        self.to = to
        self.term = term
        self.logTerm = logTerm
        self.index = index
        self.entries = entries
        self.commit = commit
        self.reject = reject
        self.rejectHint = rejectHint
        self.context = context
        self.snapshot = snapshot
        self.snapshotOffset = snapshotOffset
        self.snapshotTotalBytes = snapshotTotalBytes
        self.quiesce = quiesce
        self.campaignTransfer = campaignTransfer
        self.transferee = transferee
    }

    /// Why the message cannot be right (checked before it is stepped), or nil.
    var inconsistency: String? {
        if kind == .propose {
            // Forwarded proposals are not in any log yet; only ordinary commands may be forwarded.
            if entries.isEmpty { return "a forwarded proposal without entries" }
            if let e = entries.first(where: { $0.kind != .normal || $0.index != 0 || $0.term != 0 }) {
                return "a forwarded proposal may carry only unindexed normal entries (got \(e.kind) \(e.index)/\(e.term))"
            }
            return nil
        }
        for (i, e) in entries.enumerated() {
            if e.index != index + 1 + UInt64(i) { return "entry \(i) has index \(e.index), expected \(index + 1 + UInt64(i))" }
            if e.term > term || (i > 0 && e.term < entries[i - 1].term) || e.term < logTerm {
                return "entry \(e.index) has term \(e.term) out of order (message term \(term))"
            }
        }
        if kind == .snapshot {
            guard let s = snapshot else { return "snapshot chunk without a snapshot" }
            if snapshotOffset + UInt64(s.data.count) > snapshotTotalBytes { return "snapshot chunk beyond the total size" }
        }
        return nil
    }

    /// Approximate wire size, for transports that batch by bytes.
    public var byteSize: Int { 64 + entries.byteSize + context.count + (snapshot?.data.count ?? 0) }
}
