import Testing
@testable import ParleyCluster
import ParleyRaft
import ParleyWire
@testable import ParleyPlacement

/// Issue 17, leader balance: the planner's rule, without a cluster.
@Suite struct LeaderBalanceTests {
    /// Applies rounds of at most `limit` transfers until the planner proposes none; checks each transfer is
    /// legal when made (the source leads the shard, the target holds a replica, no shard twice in a round).
    private func settle(_ start: LeaderBalance, limit: Int, maxRounds: Int = 200) -> (LeaderBalance, transfers: Int, rounds: Int) {
        var plan = start
        var total = 0
        for round in 0..<maxRounds {
            let transfers = plan.transfers(limit: limit)
            if transfers.isEmpty { return (plan, total, round) }
            #expect(transfers.count <= limit)
            #expect(Set(transfers.map(\.shard)).count == transfers.count, "a shard moved twice in one round")
            var shards = Dictionary(uniqueKeysWithValues: plan.shards.map { ($0.shard, $0) })
            for t in transfers {
                let s = shards[t.shard]!
                #expect(s.leader == t.from && s.replicas.contains(t.to) && t.from != t.to, "illegal \(t)")
                shards[t.shard]!.leader = t.to
            }
            total += transfers.count
            plan = LeaderBalance(nodes: plan.nodes, shards: Array(shards.values))
        }
        Issue.record("no balance after \(maxRounds) rounds")
        return (plan, total, maxRounds)
    }

    @Test func aFreshThreeNodeClusterIsEvenedOutWithTheFewestTransfers() {
        // What `parley dev` showed: node 1 led 36 of 64 shards, nodes 2 and 3 led 15 and 13.
        let leaders = Array(repeating: NodeID(1), count: 36) + Array(repeating: 2, count: 15) + Array(repeating: 3, count: 13)
        let shards = leaders.enumerated().map { LeaderBalance.Shard(shard: $0.offset, leader: $0.element, replicas: [1, 2, 3]) }
        let start = LeaderBalance(nodes: [1, 2, 3], shards: shards)
        #expect(!start.isBalanced)
        let (end, transfers, rounds) = settle(start, limit: 4)
        #expect(end.isBalanced)
        #expect(end.counts.values.sorted() == [21, 21, 22])
        #expect(transfers == 14, "only node 1's excess moves: 36 → 22")
        #expect(rounds == 4)
    }

    @Test func aBalancedClusterIsLeftAlone() {
        let shards = (0..<64).map { LeaderBalance.Shard(shard: $0, leader: NodeID($0 % 3 + 1), replicas: [1, 2, 3]) }
        #expect(LeaderBalance(nodes: [1, 2, 3], shards: shards).transfers(limit: 10).isEmpty)
    }

    @Test func aRestartedNodeGetsItsShareBack() {
        // Node 3 restarted and leads nothing; the others split its shards.
        let shards = (0..<64).map { LeaderBalance.Shard(shard: $0, leader: NodeID($0 % 2 + 1), replicas: [1, 2, 3]) }
        let (end, transfers, _) = settle(LeaderBalance(nodes: [1, 2, 3], shards: shards), limit: 4)
        #expect(end.counts[3] == 21 || end.counts[3] == 22)
        #expect(end.isBalanced && transfers == end.counts[3])
    }

    @Test func aNodeThatDidNotAnswerIsGivenNothingAndItsShardsStay() {
        // Node 3 is paused: it is not among the nodes; the shards it still claims are not moved.
        var shards = (0..<30).map { LeaderBalance.Shard(shard: $0, leader: 1, replicas: [1, 2, 3]) }
        shards += (30..<40).map { LeaderBalance.Shard(shard: $0, leader: 3, replicas: [1, 2, 3]) }
        let plan = LeaderBalance(nodes: [1, 2], shards: shards)
        let (end, _, _) = settle(plan, limit: 8)
        #expect(end.counts == [1: 15, 2: 15])
        #expect(end.shards.filter { $0.leader == 3 }.count == 10)
        #expect(plan.transfers(limit: 100).allSatisfy { $0.to != 3 && $0.from != 3 })
    }

    @Test func aLighterNodeWithNoReplicaOfTheDonorsShardsIsReachedThroughAChain() {
        // Node 1 leads two shards that only 1 and 2 hold; node 3 holds none of them. 1 → 2 → 3.
        let shards = [
            LeaderBalance.Shard(shard: 0, leader: 1, replicas: [1, 2]),
            LeaderBalance.Shard(shard: 1, leader: 1, replicas: [1, 2]),
            LeaderBalance.Shard(shard: 2, leader: 2, replicas: [2, 3]),
        ]
        let plan = LeaderBalance(nodes: [1, 2, 3], shards: shards)
        #expect(plan.transfers(limit: 4) == [LeaderBalance.Transfer(shard: 0, from: 1, to: 2),
                                             LeaderBalance.Transfer(shard: 2, from: 2, to: 3)])
        // A chain longer than what the round may still ask for waits for the next round.
        #expect(plan.transfers(limit: 1).isEmpty)
    }

    /// Many random clusters: 4 to 9 nodes, replicas by rendezvous (as `ShardMap` places them), leaders
    /// anywhere among a shard's replicas. Balance is always reached, within ±1 of shards ÷ nodes.
    @Test(arguments: 0..<40) func randomClustersEndBalanced(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed) &* 0x9E37_79B9 &+ 17)
        let size = 4 + random.next(upperBound: 6)
        let nodes = (1...size).map { NodeID($0) }
        let map = ShardMap(shardCount: 64, replicationFactor: 3)
        let shards = (0..<64).map { shard -> LeaderBalance.Shard in
            let replicas = map.replicas(of: shard, nodes: nodes)
            // Skewed: most shards led by their replica with the lowest id.
            let leader = random.next(upperBound: 4) == 0 ? replicas[random.next(upperBound: replicas.count)] : replicas.min()!
            return LeaderBalance.Shard(shard: shard, leader: leader, replicas: replicas)
        }
        let (end, _, _) = settle(LeaderBalance(nodes: nodes, shards: shards), limit: 4)
        let share = Double(64) / Double(size)
        #expect(end.isBalanced, "seed \(seed): \(end.counts)")
        #expect(end.counts.values.allSatisfy { Double($0) >= share.rounded(.down) && Double($0) <= share.rounded(.up) })
    }

    /// The leads answer carries each shard's members after all the shards, so a node that sends none (an
    /// older one) is still read, with the caught-up voters standing in for the members.
    @Test func leadsAnswersCarryMembersAndOlderOnesStillRead() throws {
        let shards = [LeaderBalance.Shard(shard: 3, leader: 1, replicas: [1, 2], members: [1, 2, 3, 4])]
        let bytes = RaftDriver.encodeLeads(shards)
        #expect(try RaftDriver.decodeLeads(bytes) == shards)
        var old = ByteWriter()
        old.write(Int(1)); old.write(Int(3)); old.write(UInt64(1)); old.write(Int(2)); old.write(UInt64(1)); old.write(UInt64(2))
        #expect(try RaftDriver.decodeLeads(old.bytes) == [LeaderBalance.Shard(shard: 3, leader: 1, replicas: [1, 2])])
        #expect(throws: (any Error).self) { try RaftDriver.decodeLeads(Array(bytes.dropLast())) }
    }
}
