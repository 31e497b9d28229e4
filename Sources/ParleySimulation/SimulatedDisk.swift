import ParleyRaft

/// One node's disk: what survived the last fsync (`durable`) and writes since (`unsynced`) that a crash
/// may lose. Writes are ordered, so a crash keeps some prefix of the unsynced writes (maybe none).
struct SimulatedDisk {
    /// One ordered write. Entries are written one at a time so a crash can tear a batch.
    enum Write {
        /// A received snapshot together with the hard state of the same Ready (one record, as a
        /// restart must never see a snapshot beyond its commit index).
        case snapshot(Snapshot, HardState)
        case entry(Entry)
        case hardState(HardState)
    }

    /// The state that a restart reads back.
    struct Durable {
        var snapshot: Snapshot?
        var hardState = HardState(term: 0, vote: 0, commit: 0)
        /// Entries after the snapshot, contiguous.
        var entries: [Entry] = []

        mutating func apply(_ write: Write) {
            switch write {
            case .snapshot(let snapshot, let hardState):
                // A received snapshot replaces the whole log (as MemoryStorage.applySnapshot does).
                self.snapshot = snapshot
                self.hardState = hardState
                entries.removeAll()
            case .entry(let entry):
                entries.removeAll { $0.index >= entry.index }
                entries.append(entry)
            case .hardState(let hardState):
                self.hardState = hardState
            }
        }
    }

    private(set) var durable = Durable()
    private(set) var unsynced: [Write] = []

    /// Starts a disk that already holds `snapshot` (bootstrap of the initial members).
    init(bootstrap snapshot: Snapshot?, hardState: HardState) {
        durable.snapshot = snapshot
        durable.hardState = hardState
    }

    mutating func write(_ write: Write) { unsynced.append(write) }

    mutating func sync() {
        for write in unsynced { durable.apply(write) }
        unsynced.removeAll()
    }

    /// Replaces the snapshot and drops entries it covers (the application's own snapshot + compaction),
    /// synced at once as etcd does when it saves a snapshot.
    mutating func compact(to snapshot: Snapshot) {
        sync()
        durable.snapshot = snapshot
        durable.entries.removeAll { $0.index <= snapshot.metadata.index }
    }

    /// A crash: the first `survivors` unsynced writes reached the platter, the rest are lost.
    mutating func crash(survivors: Int) {
        for write in unsynced.prefix(survivors) { durable.apply(write) }
        unsynced.removeAll()
    }

    /// Storage rebuilt from the durable part, as a restarted node reads it.
    func recover() throws -> MemoryStorage {
        let storage = MemoryStorage()
        var after: LogIndex = 0
        if let snapshot = durable.snapshot {
            try storage.applySnapshot(snapshot)
            after = snapshot.metadata.index
        }
        let entries = durable.entries.filter { $0.index > after }
        if !entries.isEmpty { try storage.append(entries) }
        storage.setHardState(durable.hardState)
        return storage
    }
}
