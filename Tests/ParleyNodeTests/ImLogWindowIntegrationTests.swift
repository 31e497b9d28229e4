import Foundation
import ParleyClient
import ParleyPlacement
import Testing

/// Issue 38 item 5, SPEC D1 on a real 3-node cluster: with `--im-log-window-bytes 65536`, every shard's leader
/// sets the replicated bound, each node's IM items in memory stay within it (`/status`), and what left memory
/// is still served from the history database: a device that logs in on another node syncs every one-to-one
/// message in order, and a team's log is read whole from its first item; so does a device on a node killed
/// with -9 and started again (items leave memory, and are written, as its replicas apply: a replay writes
/// what the crash cut off).
@Suite(.serialized, .timeLimit(.minutes(4))) struct ImLogWindowIntegrationTests {
    static let api = ImClientEndToEndTests.api
    static let bound = 65_536, shards = 4

    @Test("D1 / 38.5: IM logs stay within their bytes in memory; a later device on another node syncs all 240 messages and a team's 120 in order")
    func logsPastTheWindowAreServed() async throws {
        let e2e = ImClientEndToEndTests()
        let arguments = ["--app", "dev:\(Self.api.secret)", "--im-log-window-bytes", "\(Self.bound)"]
        try await withLocalCluster(shards: Self.shards, extraArguments: arguments) { cluster in
            try await e2e.start(cluster, ["alice", "bob", "carol"])
            try await cluster.unlimitedSends(app: "dev")
            // 360 sends one after another on one connection: over its request budget (100 a second, bursts of
            // 200) once a round trip takes under ~6 ms, which a fast machine does (session 40 saw a 416).
            try await cluster.meta(.setConnectionBudget(appKey: "dev", .unlimited))
            try await cluster.eventually("every shard to take the IM log window bound", seconds: 20) {
                let all = await cluster.statuses()
                return all.count == 3 && all.values.allSatisfy { $0.memory?.shardsWithImLogWindowBound == Self.shards }
            }
            let (alice, _) = try await e2e.client(cluster, 1, "alice")
            try await alice.createTeam("crew", name: "Crew", options: TeamOptions(beInviteMode: "noAuth"))
            try await alice.addUsers(["bob", "carol"], toTeam: "crew")
            let padding = String(repeating: "p", count: 1_000)
            for i in 0..<240 {
                try await alice.sendMessage(to: .p2p("bob"), body: "p\(i) \(padding)", clientMessageId: "p\(i)")
                if i % 2 == 0 { try await alice.sendMessage(to: .team("crew"), body: "t\(i / 2) \(padding)", clientMessageId: "t\(i)") }
            }
            // ~360 KB of items went into logs on at most 4 shards: memory holds at most a bound per shard.
            for (node, s) in await cluster.statuses() {
                let m = try #require(s.memory)
                let held = try #require(m.imLogWindowBytes)
                #expect(held <= Self.shards * Self.bound && held > Self.bound / 2, "node \(node): \(held)")
            }
            // A resend of the first message (long out of memory) is answered with its first seq.
            #expect(try await alice.sendMessage(to: .p2p("bob"), body: "p0 \(padding)", clientMessageId: "p0") == 1)

            let (bob, bobBox) = try await e2e.client(cluster, 3, "bob")
            try await cluster.eventually("bob to sync all 240", seconds: 30) {
                bobBox.items.filter { $0.kind == "message" }.count >= 240
            }
            let bodies = bobBox.items.filter { $0.kind == "message" }.compactMap { $0.body?.split(separator: " ").first.map(String.init) }
            #expect(bodies == (0..<240).map { "p\($0)" }, "every message once, in order")
            #expect(bobBox.items.map(\.seq) == Array(1...Int64(bobBox.items.count)))
            #expect(!bobBox.events.contains { if case .historyGone = $0 { true } else { false } })

            let crew = try await bob.fetchTeam("crew", afterSeq: 0, limit: 500, members: false)
            #expect(crew.items.map(\.seq) == Array(1...Int64(crew.items.count)), "the team's log from its first item")
            let said = crew.items.compactMap { $0.body?.split(separator: " ").first.map(String.init) }.filter { $0.hasPrefix("t") }
            #expect(said == (0..<120).map { "t\($0)" })
            await bob.logout()

            cluster.kill9(3)
            try cluster.start(3)
            var again: (IMClient, ImClientEndToEndTests.Inbox)?
            try await cluster.eventually("bob to log in on the restarted node", seconds: 60) {
                again = try? await e2e.client(cluster, 3, "bob")
                return again != nil
            }
            let (bob2, bob2Box) = try #require(again)
            try await cluster.eventually("bob's device on the restarted node to sync all 240", seconds: 30) {
                bob2Box.items.filter { $0.kind == "message" }.count >= 240
            }
            let resynced = bob2Box.items.filter { $0.kind == "message" }.compactMap { $0.body?.split(separator: " ").first.map(String.init) }
            #expect(resynced == (0..<240).map { "p\($0)" }, "every message once, in order, after the restart")
            #expect(!bob2Box.events.contains { if case .historyGone = $0 { true } else { false } })
            await bob2.logout()
            await alice.logout()
        }
    }
}
