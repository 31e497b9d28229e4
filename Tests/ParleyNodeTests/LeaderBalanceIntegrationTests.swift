import Foundation
import Testing
import ParleyCluster
import ParleyRooms

/// Issue 17, leader balance, on real `parley node` processes: the meta leader's balancer evens out shard
/// leaders by leadership transfers while clients keep sending, and loses or repeats nothing.
@Suite(.serialized, .timeLimit(.minutes(4))) struct LeaderBalanceIntegrationTests {
    /// Leaders per running node, from the nodes' views (nil while some shard has no agreed leader).
    private func leaders(_ cluster: LocalCluster) async -> [UInt64: Int]? {
        let all = await cluster.statuses()
        var led = Dictionary(uniqueKeysWithValues: cluster.running.map { ($0, 0) })
        for shard in 0..<cluster.shards {
            let named = Set(all.values.compactMap { $0.shards.first { $0.shard == shard }?.leader })
            guard named.count == 1, let leader = named.first, led[leader] != nil else { return nil }
            led[leader]! += 1
        }
        return led
    }

    /// Node 3 starts after nodes 1 and 2 have elected a leader for each of the 24 shards, so it leads none
    /// (the state a restarted node is in). Within a minute it leads its share (8, every node within one of
    /// 24 ÷ 3), and the messages sent meanwhile — through every node, each retried with its
    /// clientMessageId when the answer was lost in a transfer — are each stored exactly once.
    @Test func aNodeThatStartsLateGetsItsShareOfLeadersWhileMessagesFlow() async throws {
        try await withLocalCluster(shards: 24, extraArguments: ["--leader-balance-ms", "1000"]) { cluster in
        try cluster.start(1)
        try cluster.start(2)
        try await cluster.eventually("nodes 1 and 2 to lead every shard", seconds: 45) {
            guard let led = await leaders(cluster) else { return false }
            return led.values.reduce(0, +) == 24
        }
        let rooms = MessageLoad.rooms(12, prefix: "balance", shards: 24)
        try await MessageLoad.prepare(cluster, rooms: rooms)
        let load = MessageLoad()
        load.start(cluster, rooms: rooms)

        try await load.waitFor(acknowledged: 10)
        // A settled view: while the balancer moves a leader between nodes 1 and 2 they name different ones.
        var before: [UInt64: Int]?
        try await cluster.eventually("every shard's replicas to name one leader", seconds: 20) {
            before = await leaders(cluster)
            return before != nil
        }
        #expect(before?[3] == nil)
        try cluster.start(3)
        let started = Date()
        try await cluster.eventually("node 3 to get its share of leaders", seconds: 60) {
            guard let led = await leaders(cluster), led.count == 3 else { return false }
            return (led.values.max() ?? 0) - (led.values.min() ?? 0) <= 1
        }
        let took = Date().timeIntervalSince(started)
        let after = try #require(await leaders(cluster))
        #expect(after.values.sorted() == [8, 8, 8], "\(after)")
        // Balanced stays balanced: nothing more moves.
        try await Task.sleep(for: .seconds(3))
        #expect(await leaders(cluster) == after)
        let result = await load.stop()
        try await result.expectEachStoredOnce(cluster, rooms: rooms, via: 3)
        print("leader balance: node 3 led its share after \(took) s; \(result.sent) messages, \(result.retries) retried sends, "
              + "\(result.reentered) re-enters")
        }
    }
}
