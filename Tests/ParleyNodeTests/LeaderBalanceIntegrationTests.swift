import Foundation
import Testing
import ParleyCluster
import ParleyRooms

/// Issue 17, leader balance, on real `parley node` processes: the meta leader's balancer evens out shard
/// leaders by leadership transfers while clients keep sending, and loses or repeats nothing.
@Suite(.serialized, .timeLimit(.minutes(4))) struct LeaderBalanceIntegrationTests {
    private static func session(_ user: String) -> CommandActor {
        .session(SessionIdentity(userId: user, sessionId: "\(user)#1", edgeId: "it-edge"))
    }

    /// Leaders per running node, from a majority's view (nil while some shard has no agreed leader).
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

    /// Node 3 starts after nodes 1 and 2 have elected a leader for each of the 64 shards, so it leads none
    /// (the state a restarted node is in). Within a minute it leads its share (21 or 22, every node within
    /// one of 64 ÷ 3), and the messages sent meanwhile — through every node, each retried with its
    /// clientMessageId when the answer was lost in a transfer — are each stored exactly once.
    @Test func aNodeThatStartsLateGetsItsShareOfLeadersWhileMessagesFlow() async throws {
        try await withLocalCluster(shards: 64, extraArguments: ["--leader-balance-ms", "1000"]) { cluster in
        try cluster.start(1)
        try cluster.start(2)
        try await cluster.eventually("nodes 1 and 2 to lead every shard", seconds: 45) {
            guard let led = await leaders(cluster) else { return false }
            return led.values.reduce(0, +) == 64
        }
        let shardMap = ShardMap(shardCount: 64)
        // One room on each of 16 shards, a member in each.
        var rooms: [String] = []
        var taken = Set<Int>()
        var n = 0
        while rooms.count < 16 {
            let room = "balance-\(n)"
            n += 1
            if taken.insert(shardMap.shard(ofRoom: room)).inserted { rooms.append(room) }
        }
        for room in rooms {
            let made = try await cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "ann", name: room)),
                                                room: room, via: 1)
            #expect(made.result == .success(.done))
            let entered = try await cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room,
                                                   as: Self.session("ann"), via: 2)
            #expect(entered.errorCode == nil)
        }
        try await cluster.unlimitedSends(app: "")

        // The load: round-robin over the rooms through whichever nodes run, until told to stop.
        let stop = ManagedAtomicFlag()
        let load = Task { () -> (acked: [String: Set<String>], retries: Int, failed: [String]) in
            var acked: [String: Set<String>] = [:]
            var retries = 0
            var failed: [String] = []
            var lastError = ""
            var reentered = 0
            var i = 0
            while !stop.isSet {
                let room = rooms[i % rooms.count]
                let id = "m-\(i)"
                var done = false
                for attempt in 0..<20 where !done {
                    let via = cluster.running.sorted()[(i + attempt) % cluster.running.count]
                    let send = SendMessage(roomId: room, clientMessageId: id, body: id)
                    do {
                        let out = try await cluster.submit(.sendMessage(send), room: room, as: Self.session("ann"), via: via)
                        if case .success(.messageSent) = out.result {
                            acked[room, default: []].insert(id)
                            done = true
                        } else if out.errorCode == .notEntered {
                            // The test's own stand-in edge renews its lease from one starved event loop; on a
                            // machine running the whole suite it can fall silent past the lease, and the
                            // cluster ends its sessions, as it must. Re-enter, as a client told `lost` does.
                            reentered += 1
                            _ = try? await cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room,
                                                          as: Self.session("ann"), via: via)
                        } else {
                            lastError = "\(out.result)"
                        }
                    } catch {
                        lastError = "\(error)"
                    }
                    if !done {
                        retries += 1
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
                if !done { failed.append("\(id) via \(cluster.running.sorted()): \(lastError)") }
                i += 1
                // Steady traffic, not a flood: the point is sends in flight while leaders move.
                try? await Task.sleep(for: .milliseconds(5))
            }
            if reentered > 0 { print("leader balance: re-entered \(reentered) times after the stand-in edge's lease ran out") }
            return (acked, retries, failed)
        }

        try await Task.sleep(for: .seconds(2))
        let before = try #require(await leaders(cluster))
        #expect(before[3] == nil)
        try cluster.start(3)
        let started = Date()
        try await cluster.eventually("node 3 to get its share of leaders", seconds: 60) {
            guard let led = await leaders(cluster), led.count == 3 else { return false }
            return (led.values.max() ?? 0) - (led.values.min() ?? 0) <= 1
        }
        let took = Date().timeIntervalSince(started)
        let after = try #require(await leaders(cluster))
        #expect(after.values.sorted() == [21, 21, 22], "\(after)")
        #expect(took < 60, "balanced after \(took) s")
        // Balanced stays balanced: nothing more moves.
        try await Task.sleep(for: .seconds(3))
        #expect(await leaders(cluster) == after)
        stop.set()
        let result = await load.value
        #expect(result.failed.isEmpty, "sends that never succeeded: \(result.failed.prefix(5))")
        let sent = result.acked.values.reduce(0) { $0 + $1.count }
        #expect(sent > 50, "only \(sent) messages acknowledged")

        // Every acknowledged message is in its room's history exactly once, and nothing else is.
        for room in rooms {
            var bodies: [String] = []
            var after: UInt64 = 0
            while true {
                let page = try await cluster.submit(.historySince(roomId: room, afterSeq: after, limit: 100), room: room,
                                                    as: .appServer, via: 3)
                guard case .success(.history(let items)) = page.result else {
                    Issue.record("history of \(room): \(page.result)")
                    break
                }
                bodies += items.compactMap { if case .message(let m) = $0 { m.body } else { nil } }
                guard items.count == 100, let last = items.last?.seq else { break }
                after = last
            }
            #expect(bodies.count == Set(bodies).count, "\(room): a message stored twice")
            #expect(Set(bodies) == result.acked[room, default: []], "\(room): history differs from what was acknowledged")
        }
        print("leader balance: node 3 led its share after \(took) s; \(sent) messages, \(result.retries) retried sends")
        }
    }
}

/// A stop flag the load task reads.
private final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}
