/// What a log holds: a message names the key a resend of it carries (sender, conversation, clientMessageId),
/// nil for anything else.
public protocol LogContent: Sendable, Equatable {
    var resendKey: String? { get }
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

/// A user's conversation log or a team's log (docs/im.md): items with the owner's own sequence, kept within
/// `ImLimits`' count and retention; a device syncs by asking for what follows the last sequence it has. The
/// log also knows the messages it holds by their resend key, so a resend is answered with the first send's
/// place as long as that is still in the log.
public struct SequencedLog<Kind: LogContent>: Sendable, Equatable {
    public internal(set) var entries: [LogEntry<Kind>] = []
    public internal(set) var nextSeq: UInt64 = 1
    /// Items up to this sequence were dropped.
    public internal(set) var droppedThroughSeq: UInt64 = 0
    /// Resend key → the sequence of the latest entry with it (derived from `entries`).
    private var resends: [String: UInt64] = [:]

    public init() {}

    /// Appends `kind` with the next sequence, then drops what is over the count or older than the retention.
    @discardableResult
    mutating func append(_ kind: Kind, at time: Int64, limits: ImLimits) -> LogEntry<Kind> {
        let entry = LogEntry(seq: nextSeq, time: time, kind: kind)
        nextSeq += 1
        entries.append(entry)
        if let key = kind.resendKey { resends[key] = entry.seq }
        var drop = max(0, entries.count - limits.maxLogItems)
        while drop < entries.count, entries[drop].time < time - limits.logRetentionMillis { drop += 1 }
        guard drop > 0 else { return entry }
        for old in entries.prefix(drop) {
            if let key = old.kind.resendKey, resends[key] == old.seq { resends[key] = nil }
        }
        droppedThroughSeq = entries[drop - 1].seq
        entries.removeFirst(drop)
        return entry
    }

    /// The entry a message with this resend key was stored as, while the log holds it.
    func resent(_ key: String) -> LogEntry<Kind>? { resends[key].flatMap(entry(seq:)) }

    /// The entry with this sequence, by binary search (entries are in sequence order).
    public func entry(seq: UInt64) -> LogEntry<Kind>? {
        let i = index(of: seq)
        return i < entries.count && entries[i].seq == seq ? entries[i] : nil
    }

    /// The entries after `seq`, oldest first, found by binary search (a read receipt or an unread count looks
    /// at what follows a position, not at the whole log).
    public func entries(after seq: UInt64) -> ArraySlice<LogEntry<Kind>> {
        seq == .max ? entries[entries.endIndex...] : entries[index(of: seq + 1)...]
    }

    /// The index of the first entry with a sequence at or above `seq`.
    private func index(of seq: UInt64) -> Int {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].seq < seq { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// What follows `seq`, oldest first, at most `limit` (1 … `maxSyncItems`); `historyGone` when the entry
    /// right after `seq` was dropped.
    public func after(_ seq: UInt64, limit: Int, limits: ImLimits) -> Result<[LogEntry<Kind>], ImError> {
        guard limit > 0, limit <= limits.maxSyncItems else {
            return .failure(ImError(.badParameter, "limit must be 1 … \(limits.maxSyncItems)"))
        }
        guard seq >= droppedThroughSeq else {
            return .failure(ImError(.historyGone, "the log no longer holds \(seq + 1) … \(droppedThroughSeq)"))
        }
        return .success(Array(entries(after: seq).prefix(limit)))
    }

    /// For restore: entries as a snapshot had them.
    mutating func restore(entries: [LogEntry<Kind>], nextSeq: UInt64, droppedThroughSeq: UInt64) {
        self.entries = entries
        self.nextSeq = nextSeq
        self.droppedThroughSeq = droppedThroughSeq
        resends = [:]
        for e in entries { if let key = e.kind.resendKey { resends[key] = e.seq } }
    }
}
