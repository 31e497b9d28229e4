extension Room {
    /// Q7: who may change the queue under the room's queueModificationLevel.
    func queueWriter(_ env: ApplyEnv) throws(RoomError) -> RoomOperator {
        let op = try resolveOperator(env)
        if info.queueModificationLevel == .managers && op.rank < RoomOperator.managerRank {
            throw RoomError(.noPermission, "only the creator and managers may change this queue")
        }
        return op
    }

    var queueEntries: [QueueEntry] { queue.map { QueueEntry(key: $0.key, value: $0.value.value) } }

    /// Queue init: sets the maximum size (app server).
    mutating func initQueue(maxSize: Int, _ env: ApplyEnv) throws(RoomError) {
        guard maxSize > 0, maxSize <= env.limits.maxQueueSize else {
            throw RoomError(.badParameter, "queue size must be 1 … \(env.limits.maxQueueSize)")
        }
        guard queue.count <= maxSize else {
            throw RoomError(.badParameter, "the queue already holds more elements than that")
        }
        queueMaxSize = maxSize
    }

    /// Q2: an existing key is updated in place, a new one goes to the tail; the last writer owns it.
    mutating func offer(_ o: QueueOffer, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        try FieldCheck.id(o.key, env.limits.maxQueueKeyBytes, "key")
        try FieldCheck.size(o.value, env.limits.maxQueueValueBytes, "value")
        let op = try queueWriter(env)
        let isNew = queue[o.key] == nil
        if isNew && queue.count >= queueMaxSize {
            throw RoomError(.queueFull, "the queue holds \(queueMaxSize) elements")
        }
        // The app server owns nothing that could be lost with a connection.
        queue[o.key] = QueueItem(value: o.value, owner: op.userId, transient: o.transient && op.session != nil)
        notify(.queueChange, by: op, ext: .queueChange(isNew ? .offer : .update, key: o.key, value: o.value),
               env: env, &fx)
    }

    /// Q4: updates existing keys only; returns the keys not found.
    mutating func batchUpdate(_ b: QueueBatchUpdate, _ env: ApplyEnv, _ fx: inout ApplyEffects)
        throws(RoomError) -> RoomReply {
        let limits = env.limits
        guard !b.elements.isEmpty, b.elements.count <= limits.maxQueueBatchElements else {
            throw RoomError(.badParameter, "a batch holds 1 … \(limits.maxQueueBatchElements) elements")
        }
        for e in b.elements {
            try FieldCheck.id(e.key, limits.maxQueueBatchKeyBytes, "key")
            try FieldCheck.size(e.value, limits.maxQueueValueBytes, "value")
        }
        try FieldCheck.size(b.notifyExt, limits.maxQueueNotifyExtBytes, "notifyExt")
        let op = try queueWriter(env)
        var notFound: [String] = []
        var updated: [QueueEntry] = []
        for e in b.elements {
            if queue[e.key] != nil {
                queue[e.key]!.value = e.value
                queue[e.key]!.owner = op.userId
                if op.session == nil { queue[e.key]!.transient = false }
                updated.append(e)
            } else if !notFound.contains(e.key) {
                notFound.append(e.key)
            }
        }
        if b.needNotify && !updated.isEmpty {
            notify(.queueBatchChange, by: op, notifyExt: b.notifyExt, ext: .queueBatch(.batchUpdate, updated),
                   env: env, &fx)
        }
        return .keysNotFound(notFound)
    }

    /// Q5: removes by key, or the head for an empty key.
    mutating func poll(key: String, _ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) -> RoomReply {
        try FieldCheck.size(key, env.limits.maxQueueBatchKeyBytes, "key")
        let op = try queueWriter(env)
        let index = key.isEmpty ? (queue.isEmpty ? nil : 0) : queue.index(forKey: key)
        guard let index else { throw RoomError(.queueElementNotFound, "no such queue element") }
        let (k, item) = queue.remove(at: index)
        notify(.queueChange, by: op, ext: .queueChange(.poll, key: k, value: item.value), env: env, &fx)
        return .queueElement(QueueEntry(key: k, value: item.value))
    }

    /// Q6: clears the queue.
    mutating func drop(_ env: ApplyEnv, _ fx: inout ApplyEffects) throws(RoomError) {
        let op = try queueWriter(env)
        queue.removeAll()
        notify(.queueChange, by: op, ext: .queueChange(.drop, key: "", value: ""), env: env, &fx)
    }

    /// Q3: the transient elements of users who left, removed with one 320 PartClear.
    mutating func removeTransientItems(ownedBy owners: Set<String>, by op: RoomOperator, _ env: ApplyEnv,
                                       _ fx: inout ApplyEffects) {
        var removed: [QueueEntry] = []
        for (key, item) in queue where item.transient && owners.contains(item.owner) {
            removed.append(QueueEntry(key: key, value: item.value))
        }
        guard !removed.isEmpty else { return }
        queue.removeAll { $0.value.transient && owners.contains($0.value.owner) }
        notify(.queueBatchChange, by: op, ext: .queueBatch(.partClear, removed), env: env, &fx)
    }
}
