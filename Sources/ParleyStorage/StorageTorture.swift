import ParleyRaft
import ParleyRaftWire

/// A crash-consistency exercise for a node's disk: writes Raft-shaped batches (appends, suffix
/// overwrites with a newer term, commits, snapshots and compaction, rewrites of a group's live entries and
/// deletion of the log rows no group needs) forever, reporting each batch once it is durable. Kill the process with SIGKILL at any moment; `verify` then proves that nothing reported durable
/// was lost and that no log is torn. Run by `parley storage torture` and by the storage crash test.
public struct StorageTorture {
    /// What the writer reports after each durable batch: per group, the commit index and the last index.
    public struct Durable: Equatable, Sendable {
        public var group: GroupID
        public var commit: LogIndex
        public var lastIndex: LogIndex
        public var lastTerm: Term
    }

    public let database: NodeDatabase
    public let groupCount: Int
    /// This writer's share of the groups when several write one database at once, as a node's Raft loops do
    /// (issue 35): group `g` is writer `(g - 1) % writers`'s.
    public let writer: Int
    public let writers: Int
    private var random: SplitMix64

    public init(database: NodeDatabase, groups: Int, seed: UInt64, writer: Int = 0, of writers: Int = 1) {
        precondition(writers >= 1 && (0..<writers).contains(writer))
        self.database = database
        self.groupCount = groups
        self.writer = writer
        self.writers = writers
        self.random = SplitMix64(seed: seed)
    }

    /// The groups this writer writes.
    private var ownGroups: [GroupID] {
        (1...GroupID(groupCount)).filter { Int(($0 - 1) % GroupID(writers)) == writer }
    }

    /// The payload of an entry is a function of where it sits, so a torn or misplaced entry is visible.
    public static func payload(group: GroupID, index: LogIndex, term: Term) -> [UInt8] {
        let length = 16 + Int((group &* 31 &+ index &* 7) % 1000)
        var x = group &* 0x9E37_79B9_7F4A_7C15 ^ index &* 0xBF58_476D_1CE4_E5B9 ^ term
        return (0..<length).map { _ in
            x = x &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: x >> 33)
        }
    }

    /// Runs `cycles` batches (forever when nil), calling `report` after each commit returns.
    public mutating func run(cycles: Int? = nil, report: ([Durable]) -> Void) throws {
        var logs: [GroupID: DurableGroupLog] = [:]
        let held = Set(try database.groupIDs())
        let own = ownGroups
        for g in own {
            logs[g] = held.contains(g) ? try database.openGroup(g)
                                       : try database.createGroup(g, bootstrap: ConfState(voters: [1, 2, 3]))
        }
        var done = 0
        while cycles.map({ done < $0 }) ?? true {
            var batch = StorageBatch()
            var touched: [Durable] = []
            for g in own where random.next(upperBound: 2) == 0 {
                let log = logs[g]!
                touched.append(try step(log))
                // Now and then a group writes its live entries again, as one that pins old rows does.
                if random.next(upperBound: 25) == 0 { _ = try log.rewriteLiveEntries(maxBytes: 1 << 20) }
                log.stage(into: &batch)
            }
            if database.mayHoldUnneededLogRows { batch.deleteUnneededLogRows = 1 + random.next(upperBound: 64) }
            try database.commit(batch)
            report(touched)
            done += 1
        }
    }

    /// One group's change in a cycle: append, sometimes overwrite the uncommitted suffix with a newer
    /// term (as a new leader does), advance the commit, and now and then snapshot and compact.
    private mutating func step(_ log: DurableGroupLog) throws -> Durable {
        var hs = log.hardState
        let last = try log.lastIndex()
        var term = max(hs.term, try log.term(at: last))
        var from = last + 1
        if last > hs.commit, random.next(upperBound: 4) == 0 {
            term += 1  // a new leader replaces entries after the commit index
            from = hs.commit + 1 + LogIndex(random.next(upperBound: Int(last - hs.commit)))
        }
        let count = 1 + random.next(upperBound: 20)
        let entries = (0..<LogIndex(count)).map { i in
            Entry(term: term, index: from + i, data: Self.payload(group: log.group, index: from + i, term: term))
        }
        try log.append(entries)
        let newLast = entries.last!.index
        hs.term = term
        hs.commit = max(hs.commit, newLast - LogIndex(random.next(upperBound: min(count, 5))))
        log.setHardState(hs)
        let snap = try log.snapshot().metadata.index
        if hs.commit > snap + 200, random.next(upperBound: 3) == 0 {
            let at = hs.commit - 50
            try log.createSnapshot(at: at, confState: nil, data: Self.payload(group: log.group, index: at, term: 0))
            try log.compact(upTo: at)
        }
        return Durable(group: log.group, commit: hs.commit, lastIndex: newLast, lastTerm: term)
    }

    /// Checks the database after a crash against the last batch reported durable: every group opens (its
    /// log is contiguous), every entry holds its own payload, the commit index did not go back, and the
    /// reported committed prefix is still there.
    public static func verify(database: NodeDatabase, lastReported: [GroupID: Durable]) throws -> [String] {
        var problems: [String] = []
        for g in try database.groupIDs() {
            let log = try database.openGroup(g)
            let first = try log.firstIndex(), last = try log.lastIndex()
            if first <= last {
                for e in try log.entries(from: first, to: last + 1, maxBytes: .max)
                where e.data != payload(group: g, index: e.index, term: e.term) {
                    problems.append("group \(g): entry \(e.index) holds the wrong bytes")
                }
            }
            guard let reported = lastReported[g] else { continue }
            if log.hardState.commit < reported.commit {
                problems.append("group \(g): commit went back from \(reported.commit) to \(log.hardState.commit)")
            }
            if last < reported.commit {
                problems.append("group \(g): log ends at \(last), before the durable commit \(reported.commit)")
            }
        }
        return problems
    }
}
