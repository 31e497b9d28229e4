import Foundation
import GRDB
import Testing
@testable import ParleyStorage

/// Issue 38 item 5: the IM logs' items in the history database (`im_log_chunk`): chunks per log that never
/// overlap, replays that write nothing twice, reads by seq, the unbroken run a replica serves, expiry and a
/// shard's drop.
@Suite struct ImLogChunkTests {
    private func rows(_ owner: String, _ seqs: ClosedRange<Int>, shard: Int = 0, time: (Int) -> Int = { $0 * 100 }) -> [ImLogRow] {
        seqs.map { ImLogRow(shard: shard, owner: owner, seq: UInt64($0), time: Int64(time($0)), bytes: Array("item \($0)".utf8)) }
    }

    private func seqs(_ store: RoomHistoryStore, _ owner: String, after: UInt64 = 0, below: UInt64 = .max) throws -> [UInt64] {
        try store.readNow { try $0.imLog(owner: owner, afterSeq: after, belowSeq: below, limit: 10_000) }.map(\.seq)
    }

    @Test("38.5: items are read back by seq, in order, each once; a replay writes nothing twice; the run a replica serves stops at a gap")
    func readsReplaysAndRuns() throws {
        let store = try RoomHistoryStore(path: try temporaryDatabasePath("im-log"), durable: false)
        store.insertLater([], imLogs: rows("u:ann", 1...10) + rows("t:crew", 1...3))
        // A replica that took a snapshot stores from the snapshot's window on: 15 … 20, with 11 … 14 missing.
        store.insertLater([], imLogs: rows("u:ann", 15...20))
        // A replay after a crash repeats a stretch already stored: nothing is written twice.
        store.insertLater([], imLogs: rows("u:ann", 5...12))
        try store.waitForWrites()
        #expect(try seqs(store, "u:ann") == Array(1...10).map(UInt64.init) + Array(15...20).map(UInt64.init))
        #expect(try seqs(store, "t:crew") == [1, 2, 3])
        #expect(try seqs(store, "u:ann", after: 3, below: 8) == [4, 5, 6, 7])
        let item = try #require(try store.readNow { try $0.imLog(owner: "u:ann", afterSeq: 6, belowSeq: .max, limit: 1) }.first)
        #expect(item.seq == 7 && item.time == 700 && item.bytes == Array("item 7".utf8))
        // The unbroken run below the window (21): 15 … 20; below 11: from 1 (or from the oldest the log holds).
        #expect(try store.readNow { try $0.imLogRunStart(owner: "u:ann", below: 21, notBelow: 1) } == 15)
        #expect(try store.readNow { try $0.imLogRunStart(owner: "u:ann", below: 11, notBelow: 1) } == 1)
        #expect(try store.readNow { try $0.imLogRunStart(owner: "u:ann", below: 11, notBelow: 4) } == 4)
        #expect(try store.readNow { try $0.imLogRunStart(owner: "u:ann", below: 30, notBelow: 1) } == 30, "29 is not stored")
        #expect(try store.imLogCount() == 19)
    }

    @Test("38.5: expiry deletes the items past the retention (a chunk partly older is kept in part); a shard's drop removes its logs")
    func expiryAndDrop() throws {
        let store = try RoomHistoryStore(path: try temporaryDatabasePath("im-log-expiry"), durable: false)
        store.insertLater([], imLogs: rows("u:ann", 1...10))
        store.insertLater([], imLogs: rows("u:bob", 1...4, shard: 1))
        try store.waitForWrites()
        #expect(try store.deleteImLogsOlderThan(550) == 5 + 4)
        #expect(try seqs(store, "u:ann") == [6, 7, 8, 9, 10])
        store.insertLater([], imLogs: rows("u:ann", 11...12) + rows("u:bob", 5...6, shard: 1))
        try store.waitForWrites()
        #expect(try seqs(store, "u:ann") == [6, 7, 8, 9, 10, 11, 12])
        try store.dropShard(1)
        #expect(try seqs(store, "u:bob").isEmpty)
        #expect(try store.imLogCount() == 7)
    }
}
