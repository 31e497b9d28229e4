import Foundation
import ParleyNode
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyPlacement
import ParleyRooms
import Testing

/// SPEC D1 on real nodes with small bounds: each part of a node's memory stays within its setting while 1 KB
/// messages go through, `/status` and `/metrics` show it, every shard's leader sets the replicated window
/// bound, and what left memory is still served — a client on another node receives every message once and in
/// order, and every node's history holds them all.
@Suite(.serialized, .timeLimit(.minutes(4))) struct MemoryBoundIntegrationTests {
    static let window = 65_536, feed = 16_384, raftLog = 1 << 20

    @Test("D1: Raft log, feeds and history windows stay within their bytes; nothing is lost to a client or to history")
    func boundsHoldAndEverythingIsStillServed() async throws {
        let bounds = ["--history-window-bytes", "\(Self.window)", "--feed-bytes", "\(Self.feed)",
                      "--raft-log-memory", "\(Self.raftLog)", "--sqlite-cache-bytes", "\(1 << 20)"]
        try await withLocalCluster(shards: 4, extraArguments: bounds) { cluster in
            let app = "mem-app", rooms = ["mem-a", "mem-b", "mem-c"]
            try await ClientEndToEndTests.setUp(cluster, app: app, room: rooms[0], accounts: ["ann", "ben"])
            for room in rooms.dropFirst() {
                let scoped = AppScope.scoped(room, in: app)
                _ = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: "ann", name: room)), room: scoped, via: 1)
            }
            try await cluster.unlimitedSends(app: app)
            try await cluster.meta(.setConnectionBudget(appKey: app, .unlimited))
            // Every shard's leader proposes the node's window bound once every node reads it.
            try await cluster.eventually("every shard to take the window bound", seconds: 20) {
                let all = await cluster.statuses()
                return all.count == 3 && all.values.allSatisfy { $0.memory?.shardsWithWindowBound == 4 }
            }
            let ann = ChatroomClient(configuration: .addresses([ClientEndToEndTests.address(cluster, 1)]))
            let ben = ChatroomClient(configuration: .addresses([ClientEndToEndTests.address(cluster, 3)]))
            let benInbox = ClientEndToEndTests.Inbox(ben)
            for room in rooms {
                try await ann.enterChatroom(ChatroomEnterRequest(
                    roomId: room, auth: .independent(appKey: app, account: "ann", token: "tok-ann"), nickname: "Ann"))
                try await ben.enterChatroom(ChatroomEnterRequest(
                    roomId: room, auth: .independent(appKey: app, account: "ben", token: "tok-ben"), nickname: "Ben"))
            }
            let padding = String(repeating: "m", count: 1_000)
            var sent: [String: [String]] = [:]
            var peakLog = 0, peakWindow = 0, peakFeed = 0
            for i in 0..<1_200 {
                let room = rooms[i % rooms.count]
                let body = "\(i) \(padding)"
                _ = try await ann.sendMessage(room, body: body)
                sent[room, default: []].append(body)
                if i % 50 == 49 {
                    for s in await cluster.statuses().values {
                        let m = try #require(s.memory)
                        peakLog = max(peakLog, m.raftLogBytes)
                        peakWindow = max(peakWindow, m.historyWindowBytes)
                        peakFeed = max(peakFeed, m.feedBytes)
                    }
                }
            }
            // 1.2 MB of messages went through every node; each part reached its bound and held at most that
            // (a window and a feed per shard the rooms are on), plus a cycle's appends for the log.
            let shards = Set(rooms.map { ShardMap(shardCount: 4).shard(ofRoom: AppScope.scoped($0, in: app)) }).count
            #expect(peakLog <= Self.raftLog + 64 << 10 && peakLog > Self.raftLog / 2, "log \(peakLog)")
            #expect(peakWindow <= shards * Self.window && peakWindow > Self.window / 2, "windows \(peakWindow)")
            #expect(peakFeed <= shards * (Self.feed + 2_048) && peakFeed > Self.feed / 2, "feeds \(peakFeed)")
            let (body, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(2) + "/metrics")!)
            let metrics = PrometheusText(text: String(decoding: body, as: UTF8.self))
            #expect((metrics.value("parley_memory_history_window_bytes") ?? 0) > 0)
            #expect((metrics.value("parley_raft_log_evictions_total") ?? 0) > 0)
            #expect((metrics.value("parley_memory_resident_bytes") ?? 0) > 0)

            // Ben, on another node, got every message once and in order (his edge's feed held 16 KB a shard:
            // what it missed there came from history).
            try await cluster.eventually("ben to receive all 1,200", seconds: 30) {
                var all = 0
                for room in rooms { all += await benInbox.messages(room).count }
                return all >= 1_200
            }
            for room in rooms {
                let got = await benInbox.messages(room)
                #expect(got.map(\.body) == sent[room]!, "room \(room): \(got.count) of \(sent[room]!.count)")
            }
            // Every node serves the whole history, most of it read from its store.
            for id in cluster.ids {
                let reader = ChatroomClient(configuration: .addresses([ClientEndToEndTests.address(cluster, id)]))
                try await reader.enterChatroom(ChatroomEnterRequest(
                    roomId: rooms[1], auth: .independent(appKey: app, account: "ben", token: "tok-ben"), nickname: "Ben"))
                var bodies: [String] = []
                var start: Int64 = 0
                while true {
                    let page = try await reader.fetchMessageHistory(rooms[1], query: HistoryQuery(
                        startTime: start, limit: 100, order: .asc, types: [.text]))
                    let fresh = page.compactMap { item -> (String, Int64)? in
                        if case .message(let m) = item { (m.body, m.time) } else { nil }
                    }.filter { !bodies.contains($0.0) }
                    bodies += fresh.map(\.0)
                    guard page.count == 100, let last = fresh.last?.1 else { break }
                    start = last - 1
                }
                #expect(bodies == sent[rooms[1]]!, "node \(id): \(bodies.count) of \(sent[rooms[1]]!.count)")
                await reader.close()
            }
            await ann.close()
            await ben.close()
        }
    }
}
