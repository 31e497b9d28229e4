import Foundation
import ParleyClient
import ParleyRooms
import Testing
import ParleyPlacement

/// A node stopped gracefully (SIGTERM) leaves a history store that holds every message its replicas applied:
/// the rows waiting to be handed over (at most a few ticks' worth) are written before the process exits.
/// Chaos seed 2021005 found a node stopped right after catching up whose store lacked the last messages of
/// its rooms (the history store writes on its own thread, and nothing waited for it); the store is read here
/// from the stopped nodes with `parley storage history`, as the chaos checker reads it.
@Suite(.serialized, .timeLimit(.minutes(4))) struct StopKeepsHistoryTests {
    static let app = "stop-app"

    @Test("F4: after SIGTERM every node's history store holds every acknowledged message, right up to the stop")
    func aStoppedNodesHistoryHoldsEveryAppliedMessage() async throws {
        try await withLocalCluster(shards: 4) { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            try await cluster.meta(.putApp(cluster.secrets.app(Self.app, secret: String(repeating: "s", count: 32))))
            try await cluster.meta(.putUser(cluster.secrets.user(appKey: Self.app, account: "sam", token: "tok-sam")))
            try await cluster.unlimitedSends(app: Self.app)
            try await cluster.meta(.setConnectionBudget(appKey: Self.app, .unlimited))
            let scoped = AppScope.scoped("last-words", in: Self.app)
            _ = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: "sam", name: "Last")), room: scoped, via: 1)
            var configuration = ChatroomClient.Configuration.addresses([cluster.clientAddress(cluster.ids[0])])
            configuration.requestTimeout = .seconds(20)
            let sam = ChatroomClient(configuration: configuration)
            try await sam.enterChatroom(ChatroomEnterRequest(
                roomId: "last-words", auth: .independent(appKey: Self.app, account: "sam", token: "tok-sam"), nickname: "Sam"))
            // A follower paused while the messages go in catches up with all of them at once just before the
            // stop: its history store then has the most still to write when the SIGTERM comes.
            let shard = ShardMap(shardCount: 4).shard(ofRoom: scoped)
            let leader = try #require(await cluster.leader(ofShard: shard))
            let follower = try #require(cluster.ids.first { $0 != leader && $0 != cluster.ids[0] } ?? cluster.ids.first { $0 != leader })
            cluster.pause(follower)
            var acknowledged: [String] = []
            let padding = String(repeating: "p", count: 2_000)
            for i in 0..<400 {
                _ = try await sam.sendMessage("last-words", body: "m\(i) \(padding)")
                acknowledged.append("m\(i) \(padding)")
            }
            await sam.close()
            cluster.resume(follower)
            // Every replica applied everything; then all stop at once, the newest rows still waiting.
            try await cluster.eventually("every replica to apply the same entries", seconds: 20) {
                let all = await cluster.statuses()
                guard all.count == cluster.ids.count else { return false }
                return Set(all.values.map { s in s.shards.map { "\($0.shard):\($0.applied)" }.sorted() }).count == 1
            }
            for id in cluster.ids { #expect(cluster.stop(id) == 0, "node \(id) exited cleanly") }
            for id in cluster.ids {
                let (status, output) = try await cluster.run(
                    ["storage", "history", "--data", cluster.directory.appendingPathComponent("node-\(id)").path, "--room", scoped], seconds: 60)
                #expect(status == 0, "\(output.suffix(300))")
                let bodies = output.split(separator: "\n").compactMap { line -> String? in
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                          object["kind"] as? String == "message" else { return nil }
                    return object["body"] as? String
                }
                #expect(bodies == acknowledged, "node \(id): \(bodies.count) of \(acknowledged.count)")
            }
        }
    }
}
