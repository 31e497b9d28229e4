import ParleyWire

/// What a log holds: a message names the key a resend of it carries (sender, conversation, clientMessageId),
/// nil for anything else; its parties; and what it costs in memory.
public protocol LogContent: Sendable, Equatable {
    var resendKey: String? { get }
    /// A message's sender and receiver (the receiver empty in a team's log); nil for any other item.
    var parties: LogParties? { get }
    /// Estimated bytes held for the item (SPEC D1), deterministic: replicated state drops by it.
    var estimatedBytes: Int { get }
    /// Which conversation of the log a message belongs to (a user's log: the two accounts; a team's: one).
    static func conversationKey(_ parties: LogParties) -> String
}

public struct LogParties: Sendable, Equatable {
    public var from: String
    public var to: String

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }
}

/// One item of a sequenced log: its sequence (increasing by one, never reused), entry time and content.
public struct LogEntry<Content: LogContent>: Sendable, Equatable {
    /// What the entry holds (`ImLogKind`, `TeamLogKind`): `ImLogItem.Kind` reads as it did.
    public typealias Kind = Content
    public var seq: UInt64
    /// Entry time (ms).
    public var time: Int64
    public var kind: Content

    public init(seq: UInt64, time: Int64, kind: Content) {
        self.seq = seq
        self.time = time
        self.kind = kind
    }
}

/// Issue 38 item 5: what a log keeps in memory of every item it holds, whether or not the item itself is still
/// in memory — enough for unread counts, read receipts and resends (~60 bytes against an item's ~1.7 KB).
public struct LogMark: Sendable, Equatable {
    public var seq: UInt64
    public var time: Int64
    /// A message's parties (`LogContent.parties`); empty for any other item.
    public var from: String
    public var to: String
    public var isMessage: Bool
    /// A stable hash of a message's resend key (0: none).
    var resendHash: UInt64

    var parties: LogParties? { isMessage ? LogParties(from: from, to: to) : nil }
}

extension LogMark {
    /// The mark of an item (in an extension: the struct keeps its memberwise init, which restore uses).
    init<Kind: LogContent>(_ entry: LogEntry<Kind>) {
        let parties = entry.kind.parties
        seq = entry.seq
        time = entry.time
        from = parties?.from ?? ""
        to = parties?.to ?? ""
        isMessage = parties != nil
        resendHash = entry.kind.resendKey.map(SequencedLog<Kind>.stableHash) ?? 0
    }
}

/// A user's conversation log or a team's log (docs/im.md): items with the owner's own sequence, kept within
/// `ImLimits`' count and retention; a device syncs by asking for what follows the last sequence it has. The
/// log also knows the messages it holds by their resend key, so a resend is answered with the first send's
/// place as long as that is still in the log.
///
/// SPEC D1 (issue 38 item 5): the items themselves (`entries`) are the log's newest ones — all of them until
/// the shard bounds its logs' windows by bytes (`ImShardState.logWindowBytes`); older ones are in the node's
/// IM log store. Every item the log holds keeps its `LogMark`, and each conversation its newest message whole.
public struct SequencedLog<Kind: LogContent>: Sendable, Equatable {
    /// Every item the log holds, oldest first.
    public internal(set) var marks: [LogMark] = []
    /// The newest items whole: a suffix of `marks`' items (the log's window in memory).
    public internal(set) var entries: [LogEntry<Kind>] = []
    public internal(set) var nextSeq: UInt64 = 1
    /// Items up to this sequence were dropped.
    public internal(set) var droppedThroughSeq: UInt64 = 0
    /// Each conversation's newest message the log holds (`LogContent.conversationKey`), whole even once it
    /// left the window: what a conversation list shows.
    public internal(set) var lastMessages: [String: LogEntry<Kind>] = [:]
    /// Estimated bytes of `entries` (derived).
    public private(set) var entryBytes = 0
    /// Resend key's hash → the sequence of the latest entry with it (derived from `marks`).
    private var resends: [UInt64: UInt64] = [:]

    public init() {}

    /// The oldest sequence whose item is in memory (`nextSeq` when none is).
    public var windowFirstSeq: UInt64 { entries.first?.seq ?? nextSeq }

    /// Appends `kind` with the next sequence, then drops what is over the count or older than the retention.
    @discardableResult
    mutating func append(_ kind: Kind, at time: Int64, limits: ImLimits) -> LogEntry<Kind> {
        let entry = LogEntry(seq: nextSeq, time: time, kind: kind)
        nextSeq += 1
        let mark = LogMark(entry)
        marks.append(mark)
        entries.append(entry)
        entryBytes += kind.estimatedBytes
        if mark.resendHash != 0 { resends[mark.resendHash] = entry.seq }
        if let parties = mark.parties { lastMessages[Kind.conversationKey(parties)] = entry }
        var drop = max(0, marks.count - limits.maxLogItems)
        while drop < marks.count, marks[drop].time < time - limits.logRetentionMillis { drop += 1 }
        guard drop > 0 else { return entry }
        for old in marks.prefix(drop) {
            if old.resendHash != 0, resends[old.resendHash] == old.seq { resends[old.resendHash] = nil }
            if let p = old.parties {
                let key = Kind.conversationKey(p)
                if lastMessages[key]?.seq == old.seq { lastMessages[key] = nil }
            }
        }
        droppedThroughSeq = marks[drop - 1].seq
        marks.removeFirst(drop)
        while let first = entries.first, first.seq <= droppedThroughSeq { _ = dropOldestEntry() }
        return entry
    }

    /// Takes the oldest whole item out of memory (it stays in the store and in `marks`); returns its bytes.
    mutating func dropOldestEntry() -> Int {
        let bytes = entries.removeFirst().kind.estimatedBytes
        entryBytes -= bytes
        return bytes
    }

    /// The item a message with this resend key was stored as, while the log holds it.
    func resent(_ key: String) -> LogMark? { resends[Self.stableHash(key)].flatMap(mark(seq:)) }

    /// The whole entry with this sequence, while it is in memory (binary search).
    public func entry(seq: UInt64) -> LogEntry<Kind>? {
        let i = Self.index(of: seq, in: entries) { $0.seq }
        return i < entries.count && entries[i].seq == seq ? entries[i] : nil
    }

    /// The mark of the item with this sequence, while the log holds it.
    public func mark(seq: UInt64) -> LogMark? {
        let i = Self.index(of: seq, in: marks) { $0.seq }
        return i < marks.count && marks[i].seq == seq ? marks[i] : nil
    }

    /// The marks after `seq`, oldest first (a read receipt or an unread count looks at what follows a position).
    public func marks(after seq: UInt64) -> ArraySlice<LogMark> {
        seq == .max ? marks[marks.endIndex...] : marks[Self.index(of: seq + 1, in: marks) { $0.seq }...]
    }

    /// The whole entries in memory after `seq`, oldest first.
    public func entries(after seq: UInt64) -> ArraySlice<LogEntry<Kind>> {
        seq == .max ? entries[entries.endIndex...] : entries[Self.index(of: seq + 1, in: entries) { $0.seq }...]
    }

    /// The newest message of a conversation, while the log holds it.
    public func lastMessage(_ parties: LogParties) -> LogEntry<Kind>? { lastMessages[Kind.conversationKey(parties)] }

    /// The index of the first element with a sequence at or above `seq`.
    private static func index<T>(of seq: UInt64, in list: [T], _ seqOf: (T) -> UInt64) -> Int {
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if seqOf(list[mid]) < seq { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// What follows `seq`, oldest first, at most `limit` (1 … `maxSyncItems`); `historyGone` when the entry
    /// right after `seq` was dropped — or is no longer in memory (`isInStore`: the node's store completes it).
    public func after(_ seq: UInt64, limit: Int, limits: ImLimits) -> Result<[LogEntry<Kind>], ImError> {
        guard limit > 0, limit <= limits.maxSyncItems else {
            return .failure(ImError(.badParameter, "limit must be 1 … \(limits.maxSyncItems)"))
        }
        guard seq >= droppedThroughSeq else {
            return .failure(ImError(.historyGone, "the log no longer holds \(seq + 1) … \(droppedThroughSeq)"))
        }
        guard !isInStore(after: seq) else {
            return .failure(ImError(.historyGone, "\(seq + 1) … \(windowFirstSeq - 1) are only in the store"))
        }
        return .success(Array(entries(after: seq).prefix(limit)))
    }

    /// Whether the item right after `seq` is held but not in memory.
    public func isInStore(after seq: UInt64) -> Bool { seq >= droppedThroughSeq && seq < windowFirstSeq - 1 }

    /// For restore: entries as a snapshot that holds them all had them (every mark derived from them).
    mutating func restore(entries: [LogEntry<Kind>], nextSeq: UInt64, droppedThroughSeq: UInt64) {
        let marks = entries.map(LogMark.init)
        var last: [String: LogEntry<Kind>] = [:]
        for e in entries { if let p = e.kind.parties { last[Kind.conversationKey(p)] = e } }
        restore(marks: marks, entries: entries, lastMessages: last, nextSeq: nextSeq, droppedThroughSeq: droppedThroughSeq)
    }

    /// For restore: a log whose window held only some of its items.
    mutating func restore(marks: [LogMark], entries: [LogEntry<Kind>], lastMessages: [String: LogEntry<Kind>],
                          nextSeq: UInt64, droppedThroughSeq: UInt64) {
        self.marks = marks
        self.entries = entries
        self.lastMessages = lastMessages
        self.nextSeq = nextSeq
        self.droppedThroughSeq = droppedThroughSeq
        entryBytes = entries.reduce(0) { $0 + $1.kind.estimatedBytes }
        resends = [:]
        for m in marks where m.resendHash != 0 { resends[m.resendHash] = m.seq }
    }

    /// The project's stable digest of the key (the same in every process, unlike `Hasher`); never 0. A collision
    /// could only make a sender's own new message read as a resend of another of the same log (~n²/2⁶⁵).
    static func stableHash(_ key: String) -> UInt64 {
        let h = StableDigest.of(key.utf8)
        return h == 0 ? 1 : h
    }
}
