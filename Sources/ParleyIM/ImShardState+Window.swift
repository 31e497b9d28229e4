import Collections
import ParleyWire

/// Whose log an item is in: a user's conversation log or a team's log.
public enum LogOwner: Sendable, Hashable, Comparable {
    case user(String)
    case team(String)

    /// The owner's key in the node's IM log store: a kind prefix, then the id.
    public var storeKey: String {
        switch self {
        case .user(let account): "u:" + account
        case .team(let teamId): "t:" + teamId
        }
    }
}

/// One item a shard's IM state hands to the node's store (issue 38 item 5): an item that left memory, encoded
/// as the snapshot encodes it.
public struct ImStoredItem: Sendable, Equatable {
    public var owner: LogOwner
    public var seq: UInt64
    public var time: Int64
    public var bytes: [UInt8]
}

/// The oldest item in memory of one log: the shard drops the least of these first.
struct LogHead: Comparable, Sendable {
    var time: Int64
    var owner: LogOwner
    var seq: UInt64

    static func < (a: LogHead, b: LogHead) -> Bool { (a.time, a.owner, a.seq) < (b.time, b.owner, b.seq) }
}

/// What `ImShardState` derives about its logs' windows, and the items it collects for the store: never in a
/// snapshot, never compared (two replicas that agree derive the same).
struct LogWindows: Sendable, Equatable {
    var bytes = 0
    var heads = Heap<LogHead>()
    var collects = false
    var stored: [ImStoredItem] = []

    static func == (a: LogWindows, b: LogWindows) -> Bool { true }
}

/// SPEC D1, issue 38 item 5: the items of a shard's IM logs (users' and teams') held in memory, bounded by
/// bytes all together (`logWindowBytes`, replicated: `setLogWindow`, which the shard's leader proposes once every
/// node reads it). Past the bound the shard's oldest items in memory (by time, then owner, then seq) leave it
/// until a quarter of the bound is free, and go to the node's IM log store (`collectsStoredItems`), which
/// answers a sync that reaches past a log's window. An item is written once, when it leaves memory, and never
/// while it is in memory (the Raft log and the snapshots hold it there): a log that fits is never written, and
/// the quarter makes each write a run of a log's items rather than one (writing every item as it came cost a
/// quarter of the one-to-one send rate, docs/benchmarks.md). Which items go is a function of the state alone, as
/// for the rooms' history windows, so a replica restored from a snapshot drops exactly what one that applied
/// every entry drops, and writes the same items.
extension ImShardState {
    /// Estimated bytes of every log's items in memory.
    public var logWindowBytesHeld: Int { windows.bytes }

    /// Whether the items that leave memory are collected for the node's store (`takeStoredItems`); a node's
    /// replicas do, a state made for a test or a tool need not. A replayed entry drops, and collects, what it
    /// dropped the first time; the store keeps only items above each log's highest stored seq, so nothing is
    /// written twice.
    public var collectsStoredItems: Bool {
        get { windows.collects }
        set {
            windows.collects = newValue
            if !newValue { windows.stored.removeAll() }
        }
    }

    /// The items that left memory since the last call, each log's in seq order.
    public mutating func takeStoredItems() -> [ImStoredItem] {
        defer { windows.stored.removeAll(keepingCapacity: true) }
        return windows.stored
    }

    /// The logs a command may append to (the window's accounting looks only at these).
    func logOwners(of command: ImShardCommand, actor: String) -> [LogOwner] {
        switch command {
        case .user: return [.user(actor)]
        case .send(let m): return [.user(m.to)]
        case .team(let teamId, _): return [.team(teamId)]
        case .effects(_, let entries), .screenedEffects(_, let entries):
            var seen = Set<String>(), owners: [LogOwner] = []
            for e in entries where seen.insert(e.effect.target).inserted { owners.append(.user(e.effect.target)) }
            return owners
        case .confirm, .read, .markRead, .setLogWindow: return []
        }
    }

    struct LogPoint {
        var nextSeq: UInt64
        var windowFirstSeq: UInt64
        var bytes: Int
    }

    func logPoint(_ owner: LogOwner) -> LogPoint {
        switch owner {
        case .user(let a):
            guard let log = users[a]?.log else { return LogPoint(nextSeq: 1, windowFirstSeq: 1, bytes: 0) }
            return LogPoint(nextSeq: log.nextSeq, windowFirstSeq: log.windowFirstSeq, bytes: log.entryBytes)
        case .team(let t):
            guard let log = teams[t]?.log else { return LogPoint(nextSeq: 1, windowFirstSeq: 1, bytes: 0) }
            return LogPoint(nextSeq: log.nextSeq, windowFirstSeq: log.windowFirstSeq, bytes: log.entryBytes)
        }
    }

    /// Accounts for what a command did to these logs (`before`: as they were), collects their new items, then
    /// drops the shard's oldest items while the bound is passed.
    mutating func settleLogs(_ owners: [LogOwner], before: [LogPoint]) {
        for (owner, was) in zip(owners, before) {
            let now = logPoint(owner)
            windows.bytes += now.bytes - was.bytes
            // A log's head is in the heap while it holds items in memory: push it when it got its first or a new one.
            let wasEmpty = was.windowFirstSeq == was.nextSeq, isEmpty = now.windowFirstSeq == now.nextSeq
            if logWindowBytes > 0, !isEmpty, wasEmpty || now.windowFirstSeq != was.windowFirstSeq { pushHead(owner) }
        }
        dropWhileOverBound()
    }

    /// Past the bound, items leave until a quarter of it is free.
    private mutating func dropWhileOverBound() {
        guard logWindowBytes > 0, windows.bytes > logWindowBytes else { return }
        let target = logWindowBytes - logWindowBytes / 4
        while windows.bytes > target, let top = windows.heads.popMin() {
            switch top.owner {
            case .user(let a):
                guard let first = users[a]?.log.entries.first, first.seq == top.seq, first.time == top.time else { continue }
                if windows.collects { store(first, of: top.owner) }
                windows.bytes -= users[a]!.log.dropOldestEntry()
            case .team(let t):
                guard let first = teams[t]?.log.entries.first, first.seq == top.seq, first.time == top.time else { continue }
                if windows.collects { store(first, of: top.owner) }
                windows.bytes -= teams[t]!.log.dropOldestEntry()
            }
            pushHead(top.owner)
        }
        // Heads replaced by a log's own drops (count, retention, a dismissed team) stay until popped.
        if windows.heads.count > 2 * (users.count + teams.count) + 1_024 { rebuildWindows() }
    }

    private mutating func store(_ item: ImLogItem, of owner: LogOwner) {
        var w = ByteWriter()
        Self.write(item, into: &w)
        windows.stored.append(ImStoredItem(owner: owner, seq: item.seq, time: item.time, bytes: w.bytes))
    }

    private mutating func store(_ item: TeamLogItem, of owner: LogOwner) {
        var w = ByteWriter()
        Self.write(item, into: &w)
        windows.stored.append(ImStoredItem(owner: owner, seq: item.seq, time: item.time, bytes: w.bytes))
    }

    private mutating func pushHead(_ owner: LogOwner) {
        let first: (UInt64, Int64)? = switch owner {
        case .user(let a): users[a]?.log.entries.first.map { ($0.seq, $0.time) }
        case .team(let t): teams[t]?.log.entries.first.map { ($0.seq, $0.time) }
        }
        if let (seq, time) = first { windows.heads.insert(LogHead(time: time, owner: owner, seq: seq)) }
    }

    /// Sets the bound (0: none but each log's count and retention) and applies it at once.
    mutating func setLogWindow(bytes: Int) throws {
        try check(bytes == 0 || (Self.minLogWindowBytes...Self.maxLogWindowBytes).contains(bytes),
                  "a log window is 0 (none) or 64 KiB … 1 TiB")
        logWindowBytes = bytes
        rebuildWindows()
        dropWhileOverBound()
    }

    public static let minLogWindowBytes = 64 << 10
    public static let maxLogWindowBytes = 1 << 40

    /// The derived parts, from the logs (after a restore, or to shed stale heads).
    mutating func rebuildWindows() {
        windows.bytes = users.values.reduce(0) { $0 + $1.log.entryBytes } + teams.values.reduce(0) { $0 + $1.log.entryBytes }
        windows.heads = Heap()
        guard logWindowBytes > 0 else { return }
        var heads: [LogHead] = []
        for (a, u) in users { if let f = u.log.entries.first { heads.append(LogHead(time: f.time, owner: .user(a), seq: f.seq)) } }
        for (t, r) in teams { if let f = r.log.entries.first { heads.append(LogHead(time: f.time, owner: .team(t), seq: f.seq)) } }
        windows.heads = Heap(heads)
    }

    /// Whether some log holds items that are not in memory (a snapshot must then keep the marks).
    var holdsItemsOutOfMemory: Bool {
        users.values.contains { $0.log.entries.count != $0.log.marks.count }
            || teams.values.contains { $0.log.entries.count != $0.log.marks.count }
    }

    /// A stored user-log item, decoded.
    public static func decodeUserItem(_ bytes: [UInt8]) throws(CodecError) -> ImLogItem {
        var r = ByteReader(bytes)
        return try readItem(&r)
    }

    /// A stored team-log item, decoded.
    public static func decodeTeamItem(_ bytes: [UInt8]) throws(CodecError) -> TeamLogItem {
        var r = ByteReader(bytes)
        return try readTeamItem(&r)
    }
}
