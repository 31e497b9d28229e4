/// Read-index requests waiting for a quorum to confirm the leader by acknowledging a heartbeat.
struct ReadOnly {
    struct Status {
        var request: Message
        var index: LogIndex
        var acks: Set<NodeID>
    }

    let option: ReadOnlyOption
    private var pending: [[UInt8]: Status] = [:]
    /// Contexts in arrival order: a quorum ack for one request confirms every earlier one too.
    private var queue: [[UInt8]] = []

    init(option: ReadOnlyOption) {
        self.option = option
    }

    var lastPendingContext: [UInt8]? { queue.last }
    var isEmpty: Bool { queue.isEmpty }

    mutating func addRequest(index: LogIndex, _ m: Message) {
        if pending[m.context] != nil { return }
        pending[m.context] = Status(request: m, index: index, acks: [])
        queue.append(m.context)
    }

    /// Records an ack for `context`; returns the acks so far, or nil if no such request is pending.
    mutating func recvAck(from id: NodeID, context: [UInt8]) -> Set<NodeID>? {
        guard pending[context] != nil else { return nil }
        pending[context]!.acks.insert(id)
        return pending[context]!.acks
    }

    /// Removes and returns, in order, the request with `context` and every one queued before it.
    mutating func advance(through context: [UInt8]) -> [Status] {
        guard let position = queue.firstIndex(of: context) else { return [] }
        let done = queue[...position].compactMap { pending.removeValue(forKey: $0) }
        queue.removeFirst(position + 1)
        return done
    }
}
