/// Counts of what happened in a run, to show that faults were actually exercised.
public struct SimulationStatistics: Sendable, Hashable {
    public var messagesSent = 0
    public var messagesDropped = 0
    public var messagesDuplicated = 0
    public var partitions = 0
    public var crashes = 0
    public var tornCrashes = 0
    public var restarts = 0
    public var leadersElected = 0
    public var configurationsApplied = 0
    public var membershipProposals = 0
    /// Steps the planner (`ReplicaMoves`) took in planned-moves runs, and the targets it reached.
    public var plannedSteps = 0
    public var plannedTargetsReached = 0
    public var transfers = 0
    public var snapshotsTaken = 0
    public var snapshotsReceived = 0
    public var operationsCompleted = 0
    public var operationsUnknown = 0
    public var proposalsRejected = 0
    /// Deferred commit notices a leader sent because no append or heartbeat carried its commit index in time.
    public var commitNotices = 0

    public init() {}

    /// Adds another run's counts (for totals over many seeds).
    public mutating func add(_ other: SimulationStatistics) {
        messagesSent += other.messagesSent
        messagesDropped += other.messagesDropped
        messagesDuplicated += other.messagesDuplicated
        partitions += other.partitions
        crashes += other.crashes
        tornCrashes += other.tornCrashes
        restarts += other.restarts
        leadersElected += other.leadersElected
        configurationsApplied += other.configurationsApplied
        membershipProposals += other.membershipProposals
        plannedSteps += other.plannedSteps
        plannedTargetsReached += other.plannedTargetsReached
        transfers += other.transfers
        snapshotsTaken += other.snapshotsTaken
        snapshotsReceived += other.snapshotsReceived
        operationsCompleted += other.operationsCompleted
        operationsUnknown += other.operationsUnknown
        proposalsRejected += other.proposalsRejected
        commitNotices += other.commitNotices
    }

    public var summary: String {
        "msgs \(messagesSent) (dropped \(messagesDropped), dup \(messagesDuplicated)), partitions \(partitions), "
            + "crashes \(crashes) (torn \(tornCrashes)), restarts \(restarts), leaders \(leadersElected), "
            + "conf applied \(configurationsApplied) (proposed \(membershipProposals); planner steps \(plannedSteps), "
            + "targets reached \(plannedTargetsReached)), transfers \(transfers), "
            + "snapshots taken \(snapshotsTaken) received \(snapshotsReceived), ops ok \(operationsCompleted) "
            + "unknown \(operationsUnknown), commit notices \(commitNotices)"
    }
}

/// The outcome of one seeded run.
public struct SimulationReport: Sendable {
    public var seed: UInt64
    /// The first broken invariant (safety, liveness or linearizability), if any.
    public var violation: InvariantViolation?
    /// The checker's verdict on the client history (nil when the run stopped on a safety violation).
    public var linearizability: LinearizabilityVerdict?
    public var steps: Int
    /// Virtual milliseconds simulated.
    public var virtualTime: UInt64
    public var statistics: SimulationStatistics
    /// Event trace (only when `SimulationConfig.trace` is set).
    public var trace: [String]

    /// No invariant broke (an `.unknown` checker verdict is not a failure, but is reported).
    public var passed: Bool { violation == nil }
}
