import Testing
import ParleyCluster
import ParleyRaft
import ParleyRooms

/// The shared log table on a running host: a busy group snapshots by bytes and frees its own rows; quiet
/// groups that pin old rows are rewritten one at a time.
@Suite struct LogPinTests {
    @Test func aBusyGroupSnapshotsByBytesAndAQuietOneIsRewrittenSoOldRowsGo() throws {
        let cluster = try InProcessCluster(shards: 4)
        cluster.rewriteAfterRows = 40
        cluster.logRewriteMaxBytes = 2_000
        cluster.snapshotEveryBytes = 4_000
        try cluster.restartAll()
        try cluster.submit(.createRoom(CreateRoom(roomId: "hall", creator: "ann", name: "Hall")), room: "hall")
        try cluster.submit(.enter(EnterRoom(roomId: "hall", nickname: "Ann")), room: "hall", as: session("ann"))
        let busy = cluster.shardMap.shard(ofRoom: "hall")
        for i in 0..<150 {
            try cluster.submit(.sendMessage(SendMessage(roomId: "hall", body: String(repeating: "x", count: 100) + "\(i)")),
                               room: "hall", as: session("ann"))
        }
        try cluster.run(cycles: 200)
        for n in cluster.nodes {
            // The busy shard's entries came to 4,000 bytes again and again: it took snapshots long before the
            // 10,000 entries that are otherwise due, and deleted its rows behind them. The quiet ones wrote
            // their few entries again.
            #expect(cluster.hosts[n]!.status()[busy].snapshotIndex > 50)  // 1 is the bootstrap snapshot
            #expect(try cluster.databases[n]!.logRowCount() < 150)
        }
        try cluster.run(until: { cluster.replicasAgree(on: busy) })
        for n in cluster.nodes { cluster.stop(n) }
        for n in cluster.nodes { try cluster.start(n) }
        try cluster.run(until: { cluster.allShardsHaveLeaders() && (0..<4).allSatisfy(cluster.replicasAgree(on:)) })
        let history = try cluster.submit(.fetchHistory(HistoryQuery(roomId: "hall", limit: 100)), room: "hall", as: session("ann"))
        guard case .success(.history(let items)) = history.result else { throw ClusterTestError.timeout("history") }
        #expect(items.count == 100)
    }
}
