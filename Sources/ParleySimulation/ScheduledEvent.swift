import ParleyRaft

/// Something due at a virtual time. Ties break by scheduling order, so runs are deterministic.
struct ScheduledEvent: Comparable {
    enum Kind {
        /// A node's clock ticks; ignored if the node restarted since (`incarnation` changed).
        case tick(NodeID, incarnation: Int)
        case deliver(Message)
        /// A client wakes: to time out its operation, or to start the next one.
        case client(Int)
        case fault
        case restart(NodeID)
        /// A crash planned at an election: the new leader dies before its first entry is replicated.
        case crash(NodeID, incarnation: Int)
        /// The quiet period's probe: propose the final write through the leader once there is one.
        case finalProbe
        /// A leader sends the commit index its followers were not sent yet (`SimulationRun.commitNoticeDelay`).
        case commitNotice(NodeID, incarnation: Int)
    }

    var time: UInt64
    var order: UInt64
    var kind: Kind

    static func < (lhs: ScheduledEvent, rhs: ScheduledEvent) -> Bool {
        (lhs.time, lhs.order) < (rhs.time, rhs.order)
    }

    static func == (lhs: ScheduledEvent, rhs: ScheduledEvent) -> Bool {
        lhs.time == rhs.time && lhs.order == rhs.order
    }
}

/// A directed link between two nodes (partitions may cut one direction only).
struct Link: Hashable {
    var from: NodeID
    var to: NodeID
}

/// A workload client: at most one operation outstanding, on one node it is connected to.
struct SimulatedClient {
    struct Outstanding {
        var request: UInt64
        var input: RegisterInput
        var node: NodeID
        var invokedAt: UInt64
        var deadline: UInt64
    }

    var id: Int
    var nextRequest: UInt64 = 1
    var outstanding: Outstanding?
}
