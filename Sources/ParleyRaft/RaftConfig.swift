/// How a leader confirms it is still leader before answering a read.
public enum ReadOnlyOption: Sendable, Hashable {
    /// A heartbeat round acknowledged by a quorum (ReadIndex); safe without clock assumptions.
    case safe
    /// Answer from the leader lease kept by check-quorum; needs bounded clock drift between nodes.
    case leaseBased
}

/// Configuration of one Raft node.
public struct RaftConfig: Sendable {
    /// This node's id (non-zero).
    public var id: NodeID
    /// Ticks a follower waits without hearing from a leader before it campaigns; the actual timeout is
    /// drawn from `[electionTick, 2 * electionTick)`.
    public var electionTick: Int = 10
    /// Ticks between leader heartbeats (must be < `electionTick`).
    public var heartbeatTick: Int = 1
    /// Run a pre-vote round before incrementing the term, so a rejoining node does not disrupt the group.
    public var preVote: Bool = true
    /// A leader that has not heard from a quorum within an election timeout steps down; followers
    /// ignore vote requests while they hear from a leader.
    public var checkQuorum: Bool = true
    /// Upper bound on the entry bytes in one append message (at least one entry is always sent).
    public var maxSizePerMessage: Int = 1 << 20
    /// Upper bound on append messages in flight to one peer while replicating.
    public var maxInflightMessages: Int = 256
    /// Upper bound on entry bytes in flight to one peer (0 = no limit).
    public var maxInflightBytes: Int = 0
    /// Upper bound on the payload bytes of proposals appended but not yet committed; a proposal over it
    /// is refused with `RaftError.proposalsOverUncommittedCap`.
    public var maxUncommittedEntriesSize: Int = 64 << 20
    /// Upper bound on the bytes of committed entries handed out in one `Ready` (at least one entry).
    public var maxCommittedSizePerReady: Int = 64 << 20
    public var readOnlyOption: ReadOnlyOption = .safe
    /// A leader with no proposals for this many ticks (and every follower caught up) stops heartbeating;
    /// nil = never quiesce.
    public var quiesceAfterTicks: Int? = nil
    /// Size of one chunk of a snapshot sent to a follower.
    public var snapshotChunkBytes: Int = 1 << 20
    /// Seeds the election jitter; mixed with `id` so members of one group draw different timeouts.
    public var randomSeed: UInt64 = 0
    /// The last index the application applied before a restart (0 = replay from the snapshot).
    public var applied: LogIndex = 0
    /// Lease reads: the lease lasts `electionTick - leaseDriftMarginTicks` of the leader's ticks from
    /// the send of a quorum-acknowledged heartbeat; the margin covers tick-rate drift between nodes.
    public var leaseDriftMarginTicks: Int = 2
    /// A leader removed from the configuration steps down (and hands over to an up-to-date voter).
    public var stepDownOnRemoval: Bool = true
    /// A follower that knows its leader passes proposals on to it (`.propose`) instead of refusing them;
    /// the proposer learns the outcome when the entry applies on its own replica, or never (a lost
    /// message, a new term), so it must keep its own timeout.
    public var forwardProposals: Bool = false
    /// A leader whose commit index moved does not send every follower an append for it at once: the index
    /// rides on the next append or heartbeat, or goes when the host calls `RawNode.sendCommit()`
    /// (a node does so a couple of milliseconds later). At one writer that notice and its answer were a
    /// third of a write's messages; a follower applies no later than the host's delay (issue 35).
    public var deferCommitNotice: Bool = false

    public init(id: NodeID, electionTick: Int = 10, heartbeatTick: Int = 1, preVote: Bool = true,
                checkQuorum: Bool = true, maxSizePerMessage: Int = 1 << 20, maxInflightMessages: Int = 256,
                maxInflightBytes: Int = 0, maxUncommittedEntriesSize: Int = 64 << 20,
                readOnlyOption: ReadOnlyOption = .safe, quiesceAfterTicks: Int? = nil,
                snapshotChunkBytes: Int = 1 << 20, randomSeed: UInt64 = 0) {
        self.id = id
        self.electionTick = electionTick
        self.heartbeatTick = heartbeatTick
        self.preVote = preVote
        self.checkQuorum = checkQuorum
        self.maxSizePerMessage = maxSizePerMessage
        self.maxInflightMessages = maxInflightMessages
        self.maxInflightBytes = maxInflightBytes
        self.maxUncommittedEntriesSize = maxUncommittedEntriesSize
        self.readOnlyOption = readOnlyOption
        self.quiesceAfterTicks = quiesceAfterTicks
        self.snapshotChunkBytes = snapshotChunkBytes
        self.randomSeed = randomSeed
    }

    /// Throws `RaftError.invalidConfig` describing the first setting that is out of range.
    public func validate() throws {
        func check(_ ok: Bool, _ why: String) throws { if !ok { throw RaftError.invalidConfig(why) } }
        try check(id != 0, "id must not be 0")
        try check(heartbeatTick > 0, "heartbeatTick must be > 0")
        try check(electionTick > heartbeatTick, "electionTick must be > heartbeatTick")
        try check(maxSizePerMessage > 0, "maxSizePerMessage must be > 0")
        try check(maxInflightMessages > 0, "maxInflightMessages must be > 0")
        try check(maxInflightBytes >= 0, "maxInflightBytes must be >= 0")
        try check(maxUncommittedEntriesSize > 0, "maxUncommittedEntriesSize must be > 0")
        try check(maxCommittedSizePerReady > 0, "maxCommittedSizePerReady must be > 0")
        try check(snapshotChunkBytes > 0, "snapshotChunkBytes must be > 0")
        try check((quiesceAfterTicks ?? 1) > 0, "quiesceAfterTicks must be > 0")
        try check(readOnlyOption == .safe || checkQuorum, "leaseBased reads need checkQuorum")
        try check(leaseDriftMarginTicks >= 0 && leaseDriftMarginTicks < electionTick,
                  "leaseDriftMarginTicks must be in [0, electionTick)")
    }
}
