import ParleyRaft

/// Everything about a run except its seed. Defaults suit the 500-seed test; the CLI raises `steps`.
public struct SimulationConfig: Sendable, Hashable {
    /// Founding voters (3 or 5).
    public var nodes = 3
    /// Extra node ids that membership changes may add (ids are never reused after removal).
    public var spareNodes = 3
    /// Events processed in the fault phase (each tick, message delivery, client action or fault is one).
    public var steps = 3_000
    public var clients = 4
    /// Registers used by the workload; key 0 also takes compare-and-set.
    public var keys = 3

    /// Virtual milliseconds between ticks of one node (each incarnation drifts by up to ±20%).
    public var tickInterval = 10
    public var electionTick = 10
    public var heartbeatTick = 1
    public var preVote = true
    public var checkQuorum = true
    /// How reads are confirmed; `.leaseBased` needs `leaseDriftMarginTicks` to cover the tick drift.
    public var readOnlyOption: ReadOnlyOption = .safe
    /// Covers the ±20% tick-rate drift between nodes: relative drift d = 1.2/0.8 − 1 = 0.5, and
    /// electionTick · 2d / (1 + d) = 6.7 ticks (docs/raft.md, Reads).
    public var leaseDriftMarginTicks = 7
    /// Leaders go quiet after this many idle ticks (nil: never). The host wakes quiet nodes now and then.
    public var quiesceAfterTicks: Int?
    /// Small limits so logs travel in several messages and flow control engages.
    public var maxSizePerMessage = 512
    public var maxInflightMessages = 4
    /// Small chunks so snapshot transfer takes several messages.
    public var snapshotChunkBytes = 64
    /// Each node snapshots and compacts its log after applying this many entries (0: never).
    public var snapshotEvery = 25

    /// Message kinds a node sends before the Ready that made them is synced: the hosts' rule
    /// (`MessageKind.mayLeaveBeforeSync`). A test widens it to show that an unsafe host is caught.
    public var sentBeforeSync: Set<MessageKind> = Set(MessageKind.allCases.filter(\.mayLeaveBeforeSync))

    /// Usual one-way delay in virtual ms.
    public var messageDelay: ClosedRange<Int> = 1...6
    /// Share of messages held back much longer (so they arrive out of order).
    public var longDelayRate = 0.05
    public var longDelay: ClosedRange<Int> = 20...150
    public var dropRate = 0.03
    public var duplicateRate = 0.02

    /// Virtual ms between two fault actions.
    public var faultInterval: ClosedRange<Int> = 40...250
    public var partitions = true
    public var crashes = true
    public var membershipChanges = true
    /// Membership changes as the cluster's planner makes them (`ReplicaMoves`: learner, snapshot, promote and
    /// remove in one joint change, leadership handed over first) toward a target that changes now and then,
    /// instead of drawn at random. Nil: every other seed (even seeds plan).
    public var plannedMoves: Bool?
    public var leadershipTransfers = true
    /// Share of new leaders that crash 1–15 ms after their election.
    public var youngLeaderCrashRate = 0.1
    /// Followers pass proposals on to their leader (`RaftConfig.forwardProposals`, as the node runs);
    /// off, a client sent to a follower is refused and the proposal never happens.
    public var forwardProposals = true
    /// Leaders defer commit notices (`RaftConfig.deferCommitNotice`, as a node runs) and send the ones no
    /// append carried 1–10 virtual ms later, by seed (`RawNode.sendCommit`). Nil: half the seeds do.
    public var deferredCommitNotices: Bool?
    /// Virtual ms a crashed node stays down.
    public var downtime: ClosedRange<Int> = 20...400

    /// Virtual ms a client waits for an answer before its operation counts as unknown.
    public var clientTimeout = 400
    /// Share of reads sent through the log rather than ReadIndex.
    public var logReadRate = 0.15
    /// Bound on the quiet period: a leader must be elected and a final write committed within it.
    public var livenessBound = 6_000
    /// Bound on the linearizability search per key.
    public var checkerSteps = 2_000_000
    /// Record a trace of the run in the report.
    public var trace = false
    /// Also trace every delivered message (with `trace`).
    public var traceMessages = false

    /// Swarm testing: each seed also draws its own message limits, loss, delay and fault rate (below),
    /// so different seeds stress different corners instead of all sharing one average setting.
    public var swarm = true

    public init() {}

    /// Redraws the knobs that swarm testing varies.
    mutating func vary(using random: inout SimulationRandom) {
        maxSizePerMessage = random.pick([64, 200, 512, 4096])
        maxInflightMessages = random.pick([1, 2, 4, 64])
        dropRate = random.pick([0, 0.01, 0.03, 0.1])
        duplicateRate = random.pick([0, 0.02, 0.05])
        longDelayRate = random.pick([0, 0.05, 0.2])
        faultInterval = random.pick([20...100, 40...250, 100...600])
        snapshotEvery = random.pick([5, 25, 100])
        readOnlyOption = random.pick([ReadOnlyOption.safe, .safe, .leaseBased])
        quiesceAfterTicks = random.pick([nil, nil, 20])
        youngLeaderCrashRate = random.pick([0, 0.1, 0.5])
        forwardProposals = random.pick([true, true, false])
    }

    /// The knobs in one line, for traces.
    var knobs: String {
        "maxSizePerMessage \(maxSizePerMessage), maxInflight \(maxInflightMessages), drop \(dropRate), "
            + "duplicate \(duplicateRate), long delays \(longDelayRate), faults every \(faultInterval) ms, "
            + "snapshot every \(snapshotEvery), reads \(readOnlyOption), quiesce after \(quiesceAfterTicks.map(String.init) ?? "never"), "
            + "young leaders crash \(youngLeaderCrashRate), forward proposals \(forwardProposals)"
    }
}
