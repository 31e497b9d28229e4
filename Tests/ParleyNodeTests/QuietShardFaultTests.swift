import Foundation
import Testing
import ParleyAPI

/// Issue 16 on real processes: a shard that went quiet (quiesced: an idle group sends no heartbeats) follows
/// a leader that is then paused (SIGSTOP). Its followers must notice through the transport — the link's
/// HTTP/2 ping goes unanswered — and elect a new leader, as an active group does by its election timeout.
/// Before the peer heartbeat the connection to a paused node never broke (its kernel still acknowledges
/// TCP), and a quiet group followed its frozen leader for as long as the pause lasted.
@Suite(.serialized, .timeLimit(.minutes(4))) struct QuietShardFaultTests {
    @Test func aQuietShardWhoseLeaderIsPausedElectsAnother() async throws {
        try await withLocalCluster(shards: 4) { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            try await cluster.eventually("every shard to go quiet", seconds: 30) {
                let all = await cluster.statuses()
                return all.count == 3 && all.values.allSatisfy { $0.shards.allSatisfy(\.quiesced) }
            }
            let shard = 0
            let leader = try #require(await cluster.leader(ofShard: shard))
            cluster.pause(leader)
            defer { cluster.resume(leader) }
            let began = ContinuousClock.now
            // The paused node does not answer /status; the other two name a leader among themselves.
            try await cluster.eventually("the other replicas to elect a leader", seconds: 20) {
                let all = await cluster.statuses().filter { $0.key != leader }
                let views = all.values.compactMap { $0.shards.first { $0.shard == shard } }
                return views.count == 2 && views.contains { $0.role == "leader" }
                    && Set(views.map(\.leader)).count == 1 && views[0].leader != leader
            }
            let took = ContinuousClock.now - began
            // Heartbeat timeout (4 s) + an interval (1 s) + an election, with room for a loaded machine.
            #expect(took < .seconds(15), "elected after \(took)")
            cluster.resume(leader)
            try await cluster.waitForLeaders()
        }
    }
}
