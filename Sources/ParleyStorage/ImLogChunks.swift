import Foundation
import GRDB
import ParleyWire

/// Issue 38 item 5: the IM logs' items (users' conversation logs, teams' logs) in the history database, beside
/// the rooms' history and on the same writer: a shard's IM state keeps only a window of the newest items in
/// memory (SPEC D1), and a sync past it is read here. Items are opaque to the store (the IM state encodes
/// them); a log's items are kept in chunks as the rooms' are, for the same reason (one row write per flush of a
/// busy log, not per item), and never overlap: a flush keeps only items above the log's highest stored seq.
public struct ImLogRow: Sendable, Hashable {
    public var shard: Int
    /// The log's owner (`LogOwner.storeKey`).
    public var owner: String
    public var seq: UInt64
    public var time: Int64
    public var bytes: [UInt8]

    public init(shard: Int, owner: String, seq: UInt64, time: Int64, bytes: [UInt8]) {
        self.shard = shard
        self.owner = owner
        self.seq = seq
        self.time = time
        self.bytes = bytes
    }

    /// What it holds in memory while it waits to be written (SPEC D1).
    public var estimatedBytes: Int { 64 + owner.utf8.count + bytes.count }
}

enum ImLogChunks {
    static let maxItems = 256

    static let table = """
        CREATE TABLE im_log_chunk (
            owner TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, shard INTEGER NOT NULL,
            min_time INTEGER NOT NULL, max_time INTEGER NOT NULL, item_count INTEGER NOT NULL, items BLOB NOT NULL,
            PRIMARY KEY (owner, first_seq)) WITHOUT ROWID;
        CREATE INDEX im_log_chunk_time ON im_log_chunk (min_time);
        """

    static func encode(_ rows: ArraySlice<ImLogRow>) -> [UInt8] {
        var w = ByteWriter(capacity: rows.reduce(0) { $0 + 24 + $1.bytes.count })
        w.write(UInt64(rows.count))
        for row in rows { w.write(row.seq); w.write(row.time); w.write(bytes: row.bytes) }
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> [(seq: UInt64, time: Int64, bytes: [UInt8])] {
        var r = ByteReader(bytes)
        var out: [(seq: UInt64, time: Int64, bytes: [UInt8])] = []
        for _ in 0..<(try r.readCount(minimumItemBytes: 3)) {  // three varints at least
            out.append((try r.readUInt64(), try r.readInt64(), try r.readBytes()))
        }
        guard r.isAtEnd else { throw CodecError.trailingBytes(r.remaining) }
        return out
    }

    /// Stores `rows` (in apply order, any logs) above each log's highest stored seq (`lastSeqs`, looked up once).
    static func insert(_ rows: [ImLogRow], in db: Database, lastSeqs: inout [String: UInt64?]) throws {
        guard !rows.isEmpty else { return }
        var owners: [String] = []
        var byOwner: [String: [ImLogRow]] = [:]
        for row in rows {
            if byOwner[row.owner] == nil { owners.append(row.owner) }
            byOwner[row.owner, default: []].append(row)
        }
        var insert = try PreparedInsert(db, sql: """
            INSERT OR REPLACE INTO im_log_chunk (owner, first_seq, last_seq, shard, min_time, max_time, item_count, items)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for owner in owners {
            let floor: UInt64?
            if let known = lastSeqs[owner] {
                floor = known
            } else {
                floor = try Int64.fetchOne(db.cachedStatement(sql: """
                    SELECT last_seq FROM im_log_chunk WHERE owner = ? ORDER BY first_seq DESC LIMIT 1
                    """), arguments: [owner]).map { UInt64(bitPattern: $0) }
            }
            // Rows of one log come in apply order, ascending; a replay repeats a stretch of it.
            var fresh: [ImLogRow] = []
            for row in byOwner[owner]! where row.seq > (fresh.last?.seq ?? floor ?? 0) { fresh.append(row) }
            lastSeqs[owner] = .some(fresh.last?.seq ?? floor)
            var start = 0
            while start < fresh.count {
                let part = fresh[start..<min(start + maxItems, fresh.count)]
                insert.bind(owner)
                insert.bind(Int64(bitPattern: part.first!.seq))
                insert.bind(Int64(bitPattern: part.last!.seq))
                insert.bind(Int64(part.first!.shard))
                insert.bind(part.lazy.map(\.time).min()!)
                insert.bind(part.lazy.map(\.time).max()!)
                insert.bind(Int64(part.count))
                insert.bind(bytes: encode(part))
                try insert.run()
                start += maxItems
            }
        }
    }

    /// Deletes items older than `time`; a chunk partly older is written again with the rest.
    static func deleteOlderThan(_ time: Int64, in db: Database) throws -> Int {
        var gone = try Int.fetchOne(db, sql: """
            SELECT COALESCE(SUM(item_count), 0) FROM im_log_chunk WHERE min_time < ? AND max_time < ?
            """, arguments: [time, time]) ?? 0
        try db.execute(sql: "DELETE FROM im_log_chunk WHERE min_time < ? AND max_time < ?", arguments: [time, time])
        let partial = try Row.fetchAll(db, sql: "SELECT owner, first_seq, shard, items FROM im_log_chunk WHERE min_time < ?",
                                       arguments: [time])
        for row in partial {
            let owner: String = row[0], shard: Int = row[2]
            let items = try decode([UInt8](row[3] as Data))
            let kept = items.filter { $0.time >= time }
            gone += items.count - kept.count
            try db.execute(sql: "DELETE FROM im_log_chunk WHERE owner = ? AND first_seq = ?", arguments: [owner, row[1] as Int64])
            guard !kept.isEmpty else { continue }
            var none: [String: UInt64?] = [owner: Optional<UInt64>.none]
            try insert(kept.map { ImLogRow(shard: shard, owner: owner, seq: $0.seq, time: $0.time, bytes: $0.bytes) },
                       in: db, lastSeqs: &none)
        }
        return gone
    }
}

extension HistoryReader {
    /// Issue 38 item 5: a log's items with seq in `(afterSeq, belowSeq)`, oldest first, at most `limit`.
    public func imLog(owner: String, afterSeq: UInt64, belowSeq: UInt64, limit: Int) throws -> [(seq: UInt64, time: Int64, bytes: [UInt8])] {
        guard limit > 0 else { return [] }
        let bound = { (s: UInt64) in Int64(bitPattern: min(s, UInt64(Int64.max))) }
        let chunks = try Data.fetchCursor(db, sql: """
            SELECT items FROM im_log_chunk WHERE owner = ? AND last_seq > ? AND first_seq < ? ORDER BY first_seq ASC
            """, arguments: [owner, bound(afterSeq), bound(belowSeq)])
        var out: [(seq: UInt64, time: Int64, bytes: [UInt8])] = []
        while out.count < limit, let bytes = try chunks.next() {
            for item in try ImLogChunks.decode([UInt8](bytes)) where item.seq > afterSeq && item.seq < belowSeq {
                out.append(item)
                if out.count == limit { break }
            }
        }
        return out
    }

    /// The first seq of the unbroken run of a log's stored items that ends right below `below` (not below
    /// `notBelow`); `below` when the store does not hold `below - 1`. A replica that took a snapshot stores the
    /// items from what came with it on, so older stored items may sit apart from the run.
    public func imLogRunStart(owner: String, below: UInt64, notBelow: UInt64) throws -> UInt64 {
        let bound = Int64(bitPattern: min(below, UInt64(Int64.max)))
        let chunks = try Data.fetchCursor(db, sql: """
            SELECT items FROM im_log_chunk WHERE owner = ? AND first_seq < ? ORDER BY first_seq DESC
            """, arguments: [owner, bound])
        var start = below
        while start > notBelow, let bytes = try chunks.next() {
            for item in try ImLogChunks.decode([UInt8](bytes)).reversed() where item.seq < start {
                guard item.seq == start - 1 else { return start }
                start = item.seq
                if start <= notBelow { return notBelow }
            }
        }
        return start
    }
}
