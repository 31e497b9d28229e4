import ParleyRaft

/// The client workload: puts, compare-and-sets and linearizable reads (ReadIndex, or through the log),
/// each recorded with its virtual invoke and return times for the linearizability checker.
extension SimulationRun {
    private var finalClient: Int { config.clients }

    func wake(_ client: Int) throws {
        if let outstanding = clients[client].outstanding {
            guard now >= outstanding.deadline else { return }
            giveUp(client)
        }
        guard workloadActive, client != finalClient else { return }
        let running = runningIDs
        guard !running.isEmpty else {
            schedule(after: 20, .client(client))
            return
        }
        let leaders = running.filter { nodes[$0]!.isLeader }
        let target = !leaders.isEmpty && random.chance(0.7) ? random.pick(leaders) : random.pick(running)
        let key = random.below(config.keys)
        let input: RegisterInput
        switch random.below(100) {
        case ..<45: input = .put(key: key, value: takeValue())
        case ..<85: input = .get(key: key)
        default: input = .cas(key: 0, expected: recentValue(of: 0), new: takeValue())
        }
        try invoke(client, input, on: target, throughLog: !(input.isGet && !random.chance(config.logReadRate)))
        if clients[client].outstanding == nil { schedule(after: UInt64(random.within(5...30)), .client(client)) }
    }

    /// The quiet period's final write, through whichever node leads; retried until it commits.
    func probeFinalWrite() throws {
        guard !finalWriteDone else { return }
        schedule(after: 20, .finalProbe)
        if let outstanding = clients[finalClient].outstanding {
            guard now >= outstanding.deadline else { return }
            giveUp(finalClient)
        }
        guard let leader else { return }
        try invoke(finalClient, .put(key: 1, value: takeValue()), on: leader.id, throughLog: true, timeout: 300)
    }

    private func takeValue() -> RegisterValue {
        defer { nextValue += 1 }
        return nextValue
    }

    /// A value the register held recently (per the completed history), or nil, so some cas succeed.
    private func recentValue(of key: RegisterKey) -> RegisterValue? {
        let written = history.suffix(20).compactMap { operation -> RegisterValue? in
            guard case .put(key, let value) = operation.input else { return nil }
            return value
        }
        return written.isEmpty || random.chance(0.2) ? nil : random.pick(written)
    }

    private func invoke(_ client: Int, _ input: RegisterInput, on id: NodeID, throughLog: Bool,
                        timeout: Int? = nil) throws {
        guard let node = nodes[id] else { return }
        let request = clients[client].nextRequest
        clients[client].nextRequest += 1
        if throughLog {
            do {
                try node.raw.propose(RegisterCommand(client: client, request: request, input: input).encoded())
            } catch {
                // Refused before entering any log: the operation never happened.
                statistics.proposalsRejected += 1
                note("c\(client) \(input) refused by n\(id): \(error)")
                return
            }
        } else {
            node.read(client: client, request: request, key: input.key)
        }
        let deadline = now + UInt64(timeout ?? config.clientTimeout)
        clients[client].outstanding = .init(request: request, input: input, node: id, invokedAt: now, deadline: deadline)
        note("c\(client) invokes \(input) at n\(id)\(throughLog ? "" : " (ReadIndex)")")
        // The final client's own probe loop notices its timeout.
        if client != finalClient { schedule(after: deadline - now, .client(client)) }
        try drain(id)
    }

    func answered(_ answer: SimulatedNode.Answer, by id: NodeID) {
        guard answer.client < clients.count, let outstanding = clients[answer.client].outstanding,
              outstanding.request == answer.request, outstanding.node == id else { return }
        history.append(.done(answer.client, outstanding.input, answer.output, outstanding.invokedAt, now))
        clients[answer.client].outstanding = nil
        statistics.operationsCompleted += 1
        note("c\(answer.client) \(outstanding.input) → \(answer.output) from n\(id)")
        if answer.client == finalClient {
            finalWriteDone = true
        } else if workloadActive {
            schedule(after: UInt64(random.within(1...30)), .client(answer.client))
        }
    }

    /// The client stops waiting: the operation's outcome is unknown (it may still take effect).
    private func giveUp(_ client: Int) {
        guard let outstanding = clients[client].outstanding else { return }
        history.append(.pending(client, outstanding.input, outstanding.invokedAt))
        clients[client].outstanding = nil
        statistics.operationsUnknown += 1
        note("c\(client) gives up on \(outstanding.input)")
    }

    /// At the end of the run every operation still outstanding counts as unknown.
    func closeOutstandingOperations() {
        for client in clients.indices { giveUp(client) }
    }
}

extension RegisterInput {
    var isGet: Bool {
        if case .get = self { return true }
        return false
    }
}
