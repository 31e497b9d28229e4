import Foundation
import GRDB
import Testing
import ParleyRooms
@testable import ParleyStorage

/// N5: the durable history keeps a room's items in chunks, one row per room per flush (`HistoryChunk`), and
/// answers every read as the row-per-item table did.
@Suite struct HistoryChunkTests {
    private func item(_ seq: Int, time: Int? = nil, type: MessageType = .text) -> HistoryItem {
        .message(ChatMessage(seq: UInt64(seq), serverId: UInt64(seq), time: Int64(time ?? seq * 100), senderId: "u",
                             senderNickname: "", senderAvatar: "", senderRoomExt: "", type: type, clientMessageId: "",
                             body: "b\(seq)", ext: ""))
    }

    private func rows(_ room: String, _ seqs: ClosedRange<Int>, shard: Int = 0) -> [RoomHistoryStore.Row] {
        seqs.map { RoomHistoryStore.Row(shard: shard, roomId: room, item: item($0)) }
    }

    private func chunkRows(_ store: RoomHistoryStore) throws -> Int {
        try store.queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM room_history_chunk") ?? 0 }
    }

    private func all(_ store: RoomHistoryStore, _ room: String) throws -> [UInt64] {
        try store.since(roomId: room, afterSeq: 0, belowSeq: .max, notBefore: .min, limit: 10_000).map(\.seq)
    }

    /// SPEC D1: rows handed over and not yet written are memory; past the store's bound the hand-over waits
    /// for the writer (a replica replaying its log after a restart applies far faster than the store writes).
    @Test func D1_rowsWaitingForTheWriterStayWithinTheirBound() throws {
        let path = try temporaryDatabasePath("history-bound")
        let store = try RoomHistoryStore(path: path, durable: true, maxQueuedBytes: 16 << 10)
        var peak = 0
        for n in 0..<60 {
            let batch = rows("r\(n % 5)", (n * 20 + 1)...(n * 20 + 20))
            let bytes = batch.reduce(0) { $0 + $1.item.estimatedBytes }
            store.insertLater(batch)
            peak = max(peak, store.queuedRowBytes)
            #expect(store.queuedRowBytes <= (16 << 10) + bytes)
        }
        try store.waitForWrites()
        #expect(store.queuedRowBytes == 0)
        #expect(try store.count() == 1_200)
        #expect(peak > 0)
    }

    @Test func N5_aFlushWritesOneRowPerRoom() throws {
        let db = try NodeDatabase(path: try temporaryDatabasePath("history"), durable: false)
        var batch = StorageBatch()
        // Interleaved as apply leaves them: three rooms of two shards.
        for seq in 1...40 {
            batch.history += rows("a", seq...seq) + rows("b", seq...seq) + rows("c", seq...seq, shard: 1)
        }
        try db.commit(batch)
        try db.history.waitForWrites()
        #expect(try chunkRows(db.history) == 3)
        #expect(try db.history.count() == 120)
        for room in ["a", "b", "c"] { #expect(try all(db.history, room) == (1...40).map(UInt64.init)) }
        try db.history.dropShard(0)
        #expect(try db.history.count() == 40 && all(db.history, "c").count == 40)
        // The shard's replica comes back (a snapshot's window): its rooms' items are written again.
        try db.history.insertNow(rows("a", 31...40))
        #expect(try all(db.history, "a") == (31...40).map(UInt64.init))
    }

    @Test func N5_aReplayWithOtherFlushBoundariesStoresEachItemOnce() throws {
        let store = try NodeDatabase(path: try temporaryDatabasePath("history"), durable: false).history
        try store.insertNow(rows("r", 1...10))
        // After a crash the entries after the last snapshot apply again, flushed at other moments.
        try store.insertNow(rows("r", 5...15))
        try store.insertNow(rows("r", 12...13))
        #expect(try store.count() == 15)
        #expect(try all(store, "r") == (1...15).map(UInt64.init))
        #expect(try chunkRows(store) == 2)
    }

    @Test func N5_itemsOutOfOrderInOneFlushAreSortedAndWrittenOnce() throws {
        let store = try NodeDatabase(path: try temporaryDatabasePath("history"), durable: false).history
        try store.insertNow(rows("r", 4...6) + rows("r", 1...3) + rows("r", 5...5))
        #expect(try all(store, "r") == [1, 2, 3, 4, 5, 6])
        #expect(try store.count() == 6)
    }

    @Test func N5_aChunkHoldsAtMostMaxItems() throws {
        let store = try NodeDatabase(path: try temporaryDatabasePath("history"), durable: false).history
        let n = HistoryChunk.maxItems * 2 + 10
        try store.insertNow(rows("r", 1...n))
        #expect(try chunkRows(store) == 3)
        #expect(try all(store, "r") == (1...n).map(UInt64.init))
    }

    @Test func N5_pagesCrossChunksInBothDirections() throws {
        let store = try NodeDatabase(path: try temporaryDatabasePath("history"), durable: false).history
        // Four flushes of five; even seqs are custom messages.
        for start in stride(from: 1, through: 16, by: 5) {
            try store.insertNow((start...start + 4).map {
                RoomHistoryStore.Row(shard: 0, roomId: "r", item: item($0, type: $0 % 2 == 0 ? .custom : .text))
            })
        }
        #expect(try chunkRows(store) == 4)
        #expect(try store.page(roomId: "r", after: 0, before: .max, belowSeq: 18, types: [], ascending: false, limit: 7)
            .map(\.seq) == [17, 16, 15, 14, 13, 12, 11])
        #expect(try store.page(roomId: "r", after: 350, before: 1_450, belowSeq: .max, types: [.text], ascending: true, limit: 4)
            .map(\.seq) == [5, 7, 9, 11])
        #expect(try store.since(roomId: "r", afterSeq: 8, belowSeq: 13, notBefore: 0, limit: 10).map(\.seq) == [9, 10, 11, 12])
        #expect(try store.oldestSeq(roomId: "r", notBefore: 1_250) == 13)
        #expect(try store.oldestSeq(roomId: "other", notBefore: 0) == nil)
    }

    @Test func N5_expiryRemovesExactlyTheOldItemsEvenInsideAChunk() throws {
        let store = try NodeDatabase(path: try temporaryDatabasePath("history"), durable: false).history
        // Times need not grow with seq: seq 8 was stamped by a leader whose clock was behind.
        try store.insertNow((1...10).map { RoomHistoryStore.Row(shard: 0, roomId: "r", item: item($0, time: $0 == 8 ? 50 : $0 * 100)) })
        try store.insertNow(rows("s", 1...3))  // times 100…300: all expire
        #expect(try store.deleteOlderThan(450) == 4 + 1 + 3)
        #expect(try all(store, "r") == [5, 6, 7, 9, 10])
        #expect(try all(store, "s") == [])
        #expect(try store.count() == 5)
        #expect(try store.oldestSeq(roomId: "r", notBefore: 0) == 5)
        #expect(try store.deleteOlderThan(450) == 0)
        // What follows the kept chunk still goes above it.
        try store.insertNow(rows("r", 9...12))
        #expect(try all(store, "r") == [5, 6, 7, 9, 10, 11, 12])
    }

    @Test func N5_aHistoryDatabaseWithARowPerItemIsMigratedToChunks() throws {
        let path = NodeDatabase.historyPath(for: try temporaryDatabasePath("node"))
        let old = try DatabaseQueue(path: path)
        try old.write { db in
            try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            try db.execute(sql: "INSERT INTO grdb_migrations VALUES ('v1-room-history')")
            try db.execute(sql: RoomHistoryStore.rowPerItemTable)
            for (room, seq) in [("b", 2), ("a", 1), ("b", 1), ("a", 3), ("a", 2)] {
                let i = item(seq)
                try db.execute(sql: "INSERT INTO room_history VALUES (?, ?, 4, ?, ?, ?)",
                               arguments: [room, seq, i.time, Int64(i.messageType.rawValue), Data(i.encoded())])
            }
        }
        try old.close()
        let store = try RoomHistoryStore(path: path, durable: false)
        #expect(try all(store, "a") == [1, 2, 3] && all(store, "b") == [1, 2])
        #expect(try chunkRows(store) == 2)
        #expect(try store.queue.read { db in try db.tableExists("room_history") } == false)
        try store.dropShard(4)
        #expect(try store.count() == 0)
    }
}
