@testable import ParleyRaft

/// A tiny in-test cluster: RawNodes with MemoryStorage, one FIFO message queue, and links that can be
/// cut. Each node's "application" keeps the payloads of the normal entries it applied, and snapshots
/// carry that list, so tests can compare replicas.
final class TestNetwork {
    var nodes: [NodeID: RawNode] = [:]
    var storages: [NodeID: MemoryStorage] = [:]
    var configs: [NodeID: RaftConfig] = [:]
    /// Payloads of applied normal entries, per node.
    var applied: [NodeID: [[UInt8]]] = [:]
    var appliedIndex: [NodeID: LogIndex] = [:]
    var readStates: [NodeID: [ReadState]] = [:]
    /// Configurations each node applied, in order.
    var confStates: [NodeID: [ConfState]] = [:]
    var queue: [Message] = []
    /// Every message handed to the network, for tests that inspect traffic.
    var sent: [Message] = []
    /// Directed links that drop everything.
    var cut: Set<[NodeID]> = []
    /// Readies that held a snapshot or entries but did not ask for a sync (must stay 0).
    var unsyncedDurableReadies = 0
    /// Drops the messages it returns true for.
    var dropIf: ((Message) -> Bool)?
    /// Rewrites messages in flight (e.g. strips some entries).
    var rewrite: ((Message) -> Message)?

    var ids: [NodeID] { nodes.keys.sorted() }

    init(voters: [NodeID], learners: [NodeID] = [], configure: (inout RaftConfig) -> Void = { _ in }) throws {
        let conf = ConfState(voters: voters, learners: learners)
        for id in voters + learners {
            try add(id, storage: MemoryStorage(bootstrap: conf), configure: configure)
        }
    }

    /// Adds a node (e.g. a member joining later, with empty storage).
    func add(_ id: NodeID, storage: MemoryStorage = MemoryStorage(), configure: (inout RaftConfig) -> Void = { _ in }) throws {
        var config = RaftConfig(id: id, randomSeed: 42)
        configure(&config)
        configs[id] = config
        storages[id] = storage
        nodes[id] = try RawNode(config: config, storage: storage)
        applied[id] = []
        appliedIndex[id] = try storage.firstIndex() - 1
    }

    /// Rebuilds a node from what its storage holds, as after a crash: its applied state is replayed
    /// from the snapshot, or, with `keepApplied`, survives and is passed as `config.applied`.
    func restart(_ id: NodeID, keepApplied: Bool = false) throws {
        let storage = storages[id]!
        var config = configs[id]!
        if keepApplied {
            config.applied = appliedIndex[id]!
        } else {
            applied[id] = try Self.decodeState(storage.snapshot().data)
            appliedIndex[id] = try storage.firstIndex() - 1
        }
        nodes[id] = try RawNode(config: config, storage: storage)
    }

    func node(_ id: NodeID) -> RawNode { nodes[id]! }

    // MARK: - Ready handling

    /// Handles one node's Ready the way an application must: persist, send, apply, advance.
    func handleReady(_ id: NodeID) {
        let node = nodes[id]!
        guard node.hasReady else { return }
        let rd = node.ready()
        let storage = storages[id]!
        if (rd.snapshot != nil || !rd.entries.isEmpty) && !rd.mustSync { unsyncedDurableReadies += 1 }
        if let snapshot = rd.snapshot {
            try! storage.applySnapshot(snapshot)
            applied[id] = Self.decodeState(snapshot.data)
            appliedIndex[id] = snapshot.metadata.index
        }
        try! storage.append(rd.entries)
        if let hs = rd.hardState { storage.setHardState(hs) }
        for m in rd.messages {
            sent.append(m)
            queue.append(m)
        }
        for entry in rd.committedEntries {
            switch entry.kind {
            case .normal:
                if !entry.data.isEmpty { applied[id]!.append(entry.data) }
            case .confChange:
                confStates[id, default: []].append(node.applyConfChange(try! ConfChange(decoding: entry.data)))
            }
            appliedIndex[id] = entry.index
        }
        readStates[id, default: []] += rd.readStates
        node.advance(rd)
    }

    func handleAllReady() {
        for id in ids { handleReady(id) }
    }

    // MARK: - Delivery

    func isDropped(_ m: Message) -> Bool {
        cut.contains([m.from, m.to]) || nodes[m.to] == nil || (dropIf?(m) ?? false)
    }

    /// Delivers queued messages (and the ones they cause) until the network is quiet.
    func deliverAll(maxMessages: Int = 1_000_000) {
        handleAllReady()
        var delivered = 0
        while !queue.isEmpty && delivered < maxMessages {
            let batch = queue
            queue = []
            for m in batch where !isDropped(m) {
                try? nodes[m.to]!.step(rewrite?(m) ?? m)
                delivered += 1
            }
            handleAllReady()
        }
    }

    /// Ticks every node `n` times, delivering after each tick.
    func tickAll(_ n: Int = 1) {
        for _ in 0..<n {
            for id in ids { nodes[id]!.tick() }
            deliverAll()
        }
    }

    /// Ticks until some node is leader (and its election settled); returns it.
    @discardableResult
    func electLeader(maxTicks: Int = 500) -> NodeID? {
        for _ in 0..<maxTicks {
            tickAll()
            if let l = leader() { return l }
        }
        return nil
    }

    func campaign(_ id: NodeID) {
        try! nodes[id]!.campaign()
        deliverAll()
    }

    /// The node that is leader in the highest term, if any.
    func leader() -> NodeID? {
        ids.filter { nodes[$0]!.status.softState.role == .leader }
            .max { nodes[$0]!.status.hardState.term < nodes[$1]!.status.hardState.term }
    }

    func role(_ id: NodeID) -> Role { nodes[id]!.status.softState.role }
    func term(_ id: NodeID) -> Term { nodes[id]!.status.hardState.term }
    func commit(_ id: NodeID) -> LogIndex { nodes[id]!.status.hardState.commit }

    // MARK: - Partitions

    func isolate(_ id: NodeID) {
        for other in ids where other != id {
            cut.insert([id, other])
            cut.insert([other, id])
        }
    }

    func heal() {
        cut = []
        dropIf = nil
        rewrite = nil
    }

    // MARK: - Application state

    /// Every entry a node holds in storage, for comparing logs.
    func log(_ id: NodeID) -> [Entry] {
        let s = storages[id]!
        let first = try! s.firstIndex(), last = try! s.lastIndex()
        return first <= last ? try! s.entries(from: first, to: last + 1, maxBytes: .max) : []
    }

    /// Takes a snapshot of the node's applied state and compacts its log up to it.
    func compact(_ id: NodeID) throws {
        let index = appliedIndex[id]!
        let storage = storages[id]!
        try storage.createSnapshot(at: index, confState: nodes[id]!.status.confState,
                                   data: Self.encodeState(applied[id]!))
        try storage.compact(upTo: index)
    }

    static func encodeState(_ payloads: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for p in payloads {
            withUnsafeBytes(of: UInt32(p.count).littleEndian) { out.append(contentsOf: $0) }
            out.append(contentsOf: p)
        }
        return out
    }

    static func decodeState(_ bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = 0
        while i + 4 <= bytes.count {
            let n = Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24
            out.append(Array(bytes[(i + 4)..<(i + 4 + n)]))
            i += 4 + n
        }
        return out
    }
}

/// A payload with a recognisable content.
func payload(_ i: Int, size: Int = 8) -> [UInt8] {
    var p = Array(repeating: UInt8(truncatingIfNeeded: i), count: size)
    withUnsafeBytes(of: UInt32(i).littleEndian) { for (k, b) in $0.enumerated() where k < size { p[k] = b } }
    return p
}
