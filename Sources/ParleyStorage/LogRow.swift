import Synchronization
import ParleyRaft
import ParleyWire
import ParleyRaftWire

/// One row of `raft_log`: the entries one group appended in one group commit. Rows are numbered in commit
/// order (`seq`), so a commit writes its rows at the end of one table — a few pages, however many groups
/// it touches — where a row per (group, index) dirtied a page per group per commit. A row replaces any
/// entries the group held from its first index on (a follower's divergent suffix), so a group's log is its
/// rows replayed in order.
enum LogRow {
    /// `[index][term][kind][data]` per entry, indexes consecutive.
    static func encode(_ entries: [Entry]) -> [UInt8] {
        var w = ByteWriter(capacity: entries.reduce(0) { $0 + $1.data.count + 8 })
        for e in entries {
            w.write(e.index)
            w.write(e.term)
            w.write(e.kind.rawValue)
            w.write(bytes: e.data)
        }
        return w.bytes
    }

    /// The row's entries; those up to `dataThrough` without their data (never copied out of the row: SPEC D1,
    /// a node opening its groups holds their committed entries' indexes and terms only).
    static func decode(_ bytes: [UInt8], group: GroupID, dataThrough: LogIndex = 0) throws -> [Entry] {
        var r = ByteReader(bytes)
        var out: [Entry] = []
        do {
            while !r.isAtEnd {
                let index = try r.readUInt64()
                if let previous = out.last?.index, index != previous + 1 {
                    throw StorageError.corrupt("group \(group): log jumps from \(previous) to \(index)")
                }
                let term = try r.readUInt64()
                guard let kind = EntryKind(rawValue: try r.readByte()) else {
                    throw StorageError.corrupt("group \(group): entry \(index) has an unknown kind")
                }
                if index <= dataThrough {
                    try r.skipBytes()
                    out.append(Entry(term: term, index: index, kind: kind, data: []))
                } else {
                    out.append(Entry(term: term, index: index, kind: kind, data: try r.readBytes()))
                }
            }
        } catch let error as CodecError {
            throw StorageError.corrupt("group \(group): unreadable log row (\(error))")
        }
        return out
    }
}

/// Hands out `raft_log` row numbers, one database's worth, in the order rows are staged (which is the
/// order they commit: the host stages and commits on one thread).
final class LogSequence: Sendable {
    private let next: Mutex<Int64>

    init(next: Int64) { self.next = Mutex(next) }

    func take() -> Int64 { next.withLock { n in defer { n += 1 }; return n } }
    /// The number the next row will get.
    var upcoming: Int64 { next.withLock { $0 } }
}
