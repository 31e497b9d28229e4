import Foundation
import Testing
import ParleyCluster
import ParleyRaft
import ParleyRooms
import ParleyStorage

/// N5 / X2: room history is written to each node's database at apply, kept within retention, and read back
/// when a query reaches past the room's in-memory window.
@Suite struct DurableHistoryTests {
    static func bodies(_ outcome: ApplyOutcome) -> [String] {
        guard case .success(.history(let items)) = outcome.result else { return [] }
        return items.compactMap { if case .message(let m) = $0 { m.body } else { nil } }
    }

    static func cluster(window: Int, flushTicks: Int = 4, snapshotEvery: LogIndex = 10_000) throws -> InProcessCluster {
        let cluster = try InProcessCluster(shards: 1)
        cluster.limits.maxHistoryPerRoom = window
        cluster.historyFlushTicks = flushTicks
        cluster.snapshotEvery = snapshotEvery
        try cluster.restartAll()
        try cluster.submit(.createRoom(CreateRoom(roomId: "deep", creator: "ann", name: "Deep")), room: "deep")
        try cluster.submit(.enter(EnterRoom(roomId: "deep", nickname: "Ann")), room: "deep", as: session("ann"))
        return cluster
    }

    @Test func N5_historyBeyondTheInMemoryWindowIsServedFromTheDatabaseInBothOrders() throws {
        // Rows are never written on time here: the reads that reach past the window write them first.
        let cluster = try Self.cluster(window: 10, flushTicks: 1_000_000)
        for i in 0..<40 {
            cluster.clock += 1_000
            try cluster.submit(.sendMessage(SendMessage(roomId: "deep", body: "m\(i)")), room: "deep", as: session("ann"))
        }
        #expect(try cluster.databases[cluster.leader(of: 0)!]!.history.count() == 0)
        // Newest first, across the window's edge: 25 messages back from now.
        let desc = try cluster.submit(.fetchHistory(HistoryQuery(roomId: "deep", limit: 25, types: [.text])), room: "deep",
                                      as: session("ann"))
        #expect(Self.bodies(desc) == (15..<40).reversed().map { "m\($0)" })
        // Oldest first from the beginning: starts in the database, continues in memory.
        let asc = try cluster.submit(.fetchHistory(HistoryQuery(roomId: "deep", startTime: 1, limit: 100, ascending: true,
                                                                types: [.text])), room: "deep", as: session("ann"))
        #expect(Self.bodies(asc) == (0..<40).map { "m\($0)" })
        // X2: a resume from the first message works although memory dropped it.
        guard case .success(.history(let first))? = try? cluster.submit(.fetchHistory(HistoryQuery(
            roomId: "deep", startTime: 1, limit: 1, ascending: true, types: [.text])), room: "deep", as: session("ann")).result,
            let seq0 = first.first?.seq else { Issue.record("no first message"); return }
        let resumed = try cluster.submit(.historySince(roomId: "deep", afterSeq: seq0, limit: 100), room: "deep", as: session("ann"))
        #expect(Self.bodies(resumed).prefix(3) == ["m1", "m2", "m3"])
    }

    @Test func N5_rowsWaitAFewTicksAndASnapshotNeverReachesTheDiskBeforeTheRowsItCovers() throws {
        let cluster = try Self.cluster(window: 5_000, flushTicks: 1_000_000, snapshotEvery: 10)
        for i in 0..<30 {
            try cluster.submit(.sendMessage(SendMessage(roomId: "deep", body: "m\(i)")), room: "deep", as: session("ann"))
        }
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        for n in cluster.nodes {
            // Only the snapshots' commits wrote rows (every 10 entries), so some still wait in memory.
            #expect(try cluster.databases[n]!.history.count() < 31)
            #expect(cluster.hosts[n]!.status()[0].snapshotIndex >= 20)
        }
        // A crash loses the waiting rows; the restarted replicas apply the entries after their snapshots
        // again and, with rows written every tick now, every row is back.
        cluster.historyFlushTicks = 1
        for n in cluster.nodes { cluster.stop(n) }
        for n in cluster.nodes { try cluster.start(n) }
        try cluster.run(until: { cluster.allShardsHaveLeaders() && cluster.replicasAgree(on: 0) })
        try cluster.run(cycles: 4)
        for n in cluster.nodes { #expect(try cluster.databases[n]!.history.count() == 31) }  // 301 enter + 30
    }

    @Test func N5_everyReplicaWritesTheRowsAndRetentionDeletesOldOnes() throws {
        let cluster = try Self.cluster(window: 5)
        for i in 0..<12 {
            try cluster.submit(.sendMessage(SendMessage(roomId: "deep", body: "m\(i)")), room: "deep", as: session("ann"))
        }
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        try cluster.run(cycles: 10)  // rows wait up to 4 ticks (a tick every 2 cycles)
        for n in cluster.nodes {
            let rows = try cluster.databases[n]!.history.count()
            #expect(rows >= 13)  // 301 enter + 12 messages, on every replica
        }
        let host = cluster.hosts[1]!
        #expect(try host.expireHistory(now: cluster.clock + RoomLimits().historyRetentionMillis + 1) >= 13)
        #expect(try cluster.databases[1]!.history.count() == 0)
    }

    @Test func N5_theStoreFiltersByTypeTimeAndSeq() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("history-\(UUID().uuidString).sqlite").path
        let db = try NodeDatabase(path: path, durable: false)
        var batch = StorageBatch()
        for i in 1...6 {
            let m = ChatMessage(seq: UInt64(i), serverId: UInt64(i), time: Int64(i * 100), senderId: "u", senderNickname: "",
                                senderAvatar: "", senderRoomExt: "", type: i % 2 == 0 ? .custom : .text,
                                clientMessageId: "", body: "b\(i)", ext: "")
            batch.history.append(.init(shard: 0, roomId: "r", item: .message(m)))
        }
        try db.commit(batch)
        #expect(try db.history.page(roomId: "r", after: 0, before: .max, belowSeq: .max, types: [.text], ascending: true,
                                    limit: 10).map(\.seq) == [1, 3, 5])
        #expect(try db.history.page(roomId: "r", after: 150, before: 550, belowSeq: 5, types: [], ascending: false,
                                    limit: 10).map(\.seq) == [4, 3, 2])
        #expect(try db.history.since(roomId: "r", afterSeq: 4, belowSeq: .max, notBefore: 0, limit: 10).map(\.seq) == [5, 6])
        #expect(try db.history.oldestSeq(roomId: "r", notBefore: 250) == 3)
        // Writing the same rows again (a replay after a crash) changes nothing.
        try db.commit(batch)
        #expect(try db.history.count() == 6)
        try db.history.dropShard(0)
        #expect(try db.history.count() == 0)
    }
}
