import Foundation
import Testing
import ParleyCluster
import ParleyRaft
import ParleyRooms

/// SPEC D1: what a node keeps in memory is bounded by bytes — its groups' Raft logs, and each shard's rooms'
/// history windows — and what left memory is still served (the log to followers as a snapshot, history from
/// the store).
@Suite struct MemoryBoundTests {
    static let body = String(repeating: "y", count: 1_000)

    static func bodies(_ outcome: ApplyOutcome) -> [String] {
        guard case .success(.history(let items)) = outcome.result else { return [] }
        return items.compactMap { if case .message(let m) = $0 { m.body } else { nil } }
    }

    /// A cluster of 4 shards whose hosts hold at most `bound` bytes of Raft log, with `count` rooms Ann is in.
    static func boundCluster(_ bound: Int, rooms count: Int) throws -> (InProcessCluster, [String]) {
        let cluster = try InProcessCluster(shards: 4)
        cluster.memory.raftLogBytes = bound
        try cluster.restartAll()
        let rooms = (0..<count).map { "room-\($0)" }
        for r in rooms {
            try cluster.submit(.createRoom(CreateRoom(roomId: r, creator: "ann", name: r)), room: r)
            try cluster.submit(.enter(EnterRoom(roomId: r, nickname: "Ann")), room: r, as: session("ann"))
        }
        return (cluster, rooms)
    }

    /// Ann sends `count` messages of 1 KB round the rooms; the most any host's groups held of their logs meanwhile.
    static func peakLogBytes(sending count: Int, to rooms: [String], in cluster: InProcessCluster) throws -> Int {
        var peak = 0
        for i in 0..<count {
            let r = rooms[i % rooms.count]
            try cluster.submit(.sendMessage(SendMessage(roomId: r, body: body + "\(i)")), room: r, as: session("ann"))
            for host in cluster.hosts.values { peak = max(peak, host.status().reduce(0) { $0 + $1.logBytes }) }
        }
        return peak
    }

    @Test func D1_theHostsRaftLogsStayWithinTheirBytesAndALaggingReplicaStillCatchesUp() throws {
        let bound = 96 << 10
        let (cluster, rooms) = try Self.boundCluster(bound, rooms: 8)
        let lagging = cluster.nodes.last!
        cluster.stop(lagging)
        let peak = try Self.peakLogBytes(sending: 240, to: rooms, in: cluster)
        // 240 KB of messages went through every replica's log; at most the bound (and one cycle's appends,
        // a message here) was ever held, with no snapshot taken.
        #expect(peak <= bound + 4_096)
        #expect(peak > bound / 2)
        for host in cluster.hosts.values { #expect(host.status().allSatisfy { $0.snapshotIndex == 1 }) }
        // The replica that missed it all catches up from entries the leaders read back from their rows (there
        // is no snapshot it could be sent instead), and every replica agrees.
        try cluster.start(lagging)
        try cluster.run(until: { (0..<4).allSatisfy { cluster.replicasAgree(on: $0) } }, "the lagging node to catch up")
        #expect(cluster.hosts[lagging]!.status().allSatisfy { $0.snapshotIndex == 1 })
        let all = try cluster.submit(.fetchHistory(HistoryQuery(roomId: "room-3", startTime: 1, limit: 100, ascending: true,
                                                                types: [.text])), room: "room-3", as: session("ann"))
        #expect(Self.bodies(all) == stride(from: 3, to: 240, by: 8).map { Self.body + "\($0)" })
    }

    /// The host counts each group's log bytes again after the cycles that ran the group, and every group's once a
    /// tick (`LogMemoryTally`): the bound must hold with no tick at all, where only the cycles' own counting sees
    /// the logs grow.
    @Test func D1_theRaftLogBoundHoldsBetweenTicksFromEachCyclesOwnCount() throws {
        let bound = 64 << 10
        let (cluster, rooms) = try Self.boundCluster(bound, rooms: 4)
        cluster.ticksEvery = .max  // no host ticks from here on: leaders stay, nothing recounts
        let peak = try Self.peakLogBytes(sending: 200, to: rooms, in: cluster)
        // 200 KB through every replica's log, at most the bound and one cycle's appends held at any time.
        #expect(peak <= bound + 4_096)
        #expect(peak > bound / 2)
        cluster.ticksEvery = 2
        let all = try cluster.submit(.fetchHistory(HistoryQuery(roomId: "room-1", startTime: 1, limit: 100, ascending: true,
                                                                types: [.text])), room: "room-1", as: session("ann"))
        #expect(Self.bodies(all) == stride(from: 1, to: 200, by: 4).map { Self.body + "\($0)" })
    }

    @Test func D1_aShardsWindowBoundIsReplicatedAndEveryReplicaDropsTheSameAcrossRestarts() throws {
        let cluster = try InProcessCluster(shards: 1)
        cluster.snapshotEvery = 50
        try cluster.restartAll()
        for r in ["a", "b"] {
            try cluster.submit(.createRoom(CreateRoom(roomId: r, creator: "ann", name: r)), room: r)
            try cluster.submit(.enter(EnterRoom(roomId: r, nickname: "Ann")), room: r, as: session("ann"))
        }
        let bound = 64 << 10
        #expect(try cluster.submit(.setHistoryWindow(bytes: bound), room: "a").errorCode == nil)
        for i in 0..<150 {
            let r = i % 3 == 0 ? "a" : "b"
            try cluster.submit(.sendMessage(SendMessage(roomId: r, body: Self.body + "\(i)")), room: r, as: session("ann"))
        }
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        for host in cluster.hosts.values {
            let s = host.status()[0]
            #expect(s.windowBound == bound && s.windowBytes <= bound && s.windowBytes > bound / 2)
        }
        // Every replica restarts from its snapshot and replays the rest: the windows still agree byte for byte.
        for n in cluster.nodes { cluster.stop(n) }
        for n in cluster.nodes { try cluster.start(n) }
        try cluster.run(until: { cluster.allShardsHaveLeaders() })
        for i in 150..<200 {
            try cluster.submit(.sendMessage(SendMessage(roomId: "b", body: Self.body + "\(i)")), room: "b", as: session("ann"))
        }
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        // What left the windows is read from the store, whole and in order.
        let a = try cluster.submit(.fetchHistory(HistoryQuery(roomId: "a", startTime: 1, limit: 100, ascending: true,
                                                              types: [.text])), room: "a", as: session("ann"))
        #expect(Self.bodies(a) == stride(from: 0, to: 150, by: 3).map { Self.body + "\($0)" })
        let b = try cluster.submit(.fetchHistory(HistoryQuery(roomId: "b", limit: 100, types: [.text])), room: "b",
                                   as: session("ann"))
        #expect(Self.bodies(b).count == 100 && Self.bodies(b).first == Self.body + "199")
    }

    /// A restarted replica opens its log with the committed entries' data left on disk and applies them again
    /// from there: the window bound set early in the log, and every message, come back the same.
    @Test(arguments: [nil, 2_048] as [Int?])
    func D1_aRestartedReplicaReplaysItsCommittedEntriesFromDiskToTheSameState(perReady: Int?) throws {
        let cluster = try InProcessCluster(shards: 2)
        cluster.committedBytesPerReady = perReady
        try cluster.restartAll()
        for shard in 0..<2 {
            let room = (0..<50).map { "room-\($0)" }.first { cluster.shardMap.shard(ofRoom: $0) == shard }!
            #expect(try cluster.submit(.setHistoryWindow(bytes: 64 << 10), room: room).errorCode == nil)
            try cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "ann", name: room)), room: room)
            try cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room, as: session("ann"))
            for i in 0..<40 {
                try cluster.submit(.sendMessage(SendMessage(roomId: room, body: Self.body + "\(i)")), room: room, as: session("ann"))
            }
        }
        try cluster.run(until: { cluster.replicasAgree(on: 0) && cluster.replicasAgree(on: 1) })
        for n in cluster.nodes {
            cluster.stop(n)
            try cluster.start(n)
            try cluster.run(until: { cluster.allShardsHaveLeaders() && cluster.replicasAgree(on: 0) && cluster.replicasAgree(on: 1) },
                            "node \(n) to replay its log")
            for s in cluster.hosts[n]!.status() { #expect(s.windowBound == 64 << 10 && s.snapshotIndex == 1) }
        }
    }
}
