import Testing
@testable import ParleyCluster
@testable import ParleyPlacement

@Suite struct ShardMapTests {
    /// Placement must never change between versions or processes: these values are pinned.
    @Test func hashesArePinned() {
        #expect(StableHash.of("") == StableHash.mix(0xCBF2_9CE4_8422_2325))
        #expect(StableHash.jumpConsistentHash(0, buckets: 1) == 0)
        // Values computed by the reference C code of the paper (and FNV-1a + fmix64 in C), not by this code.
        #expect(StableHash.jumpConsistentHash(1, buckets: 128) == 55)
        #expect(StableHash.jumpConsistentHash(0xDEAD_BEEF, buckets: 128) == 87)
        #expect(StableHash.jumpConsistentHash(0x0123_4567_89AB_CDEF, buckets: 100_000) == 76_547)
        #expect(StableHash.of("room-1") == 7_308_134_817_306_315_839)
        #expect(StableHash.of("直播间-42") == 9_105_674_217_111_079_414)
        let map = ShardMap()
        #expect(["room-1", "lobby", "直播间-42"].map(map.shard(ofRoom:)) == [10, 10, 4])
    }

    @Test func roomsSpreadEvenlyOverShards() {
        let map = ShardMap(shardCount: 64)
        var counts = [Int](repeating: 0, count: 64)
        for i in 0..<64_000 { counts[map.shard(ofRoom: "room-\(i)")] += 1 }
        // 1000 expected per shard; a fair hash stays well within ±15 %.
        #expect(counts.min()! > 850 && counts.max()! < 1150, "\(counts)")
    }

    @Test func growingTheBucketCountMovesOnlyIntoTheNewBucket() {
        var moved = 0
        for i in 0..<10_000 {
            let key = StableHash.of("room-\(i)")
            let before = StableHash.jumpConsistentHash(key, buckets: 10)
            let after = StableHash.jumpConsistentHash(key, buckets: 11)
            if before != after {
                moved += 1
                #expect(after == 10)
            }
        }
        #expect(moved > 700 && moved < 1100)  // about 1/11 of the keys
    }

    @Test func replicasAreDistinctDeterministicAndBalanced() {
        let map = ShardMap(shardCount: 64, replicationFactor: 3)
        let nodes: [UInt64] = [1, 2, 3, 4, 5]
        var load: [UInt64: Int] = [:]
        for s in 0..<64 {
            let r = map.replicas(of: s, nodes: nodes)
            #expect(r.count == 3 && Set(r).count == 3)
            #expect(r == map.replicas(of: s, nodes: nodes.reversed()))  // input order does not matter
            for n in r { load[n, default: 0] += 1 }
        }
        // 64 * 3 / 5 ≈ 38 replicas per node.
        #expect(load.values.allSatisfy { $0 > 25 && $0 < 52 }, "\(load)")
        #expect(map.replicas(of: 0, nodes: [7]) == [7])
    }

    @Test func addingANodeMovesOnlyTheReplicasItTakes() {
        let map = ShardMap(shardCount: 256, replicationFactor: 3)
        let before = (0..<256).map { Set(map.replicas(of: $0, nodes: [1, 2, 3, 4])) }
        let after = (0..<256).map { Set(map.replicas(of: $0, nodes: [1, 2, 3, 4, 5])) }
        var changed = 0
        for s in 0..<256 where before[s] != after[s] {
            changed += 1
            // The only change is that node 5 took one place.
            #expect(after[s].contains(5) && after[s].subtracting([5]).isSubset(of: before[s]))
        }
        #expect(changed > 100 && changed < 210)  // about 3/5 of the shards
    }

    @Test func groupsAndShardsCorrespond() {
        let map = ShardMap(shardCount: 8)
        #expect(map.group(of: 0) == 1 && map.group(of: 7) == 8)
        #expect(map.shard(ofGroup: 0) == nil && map.shard(ofGroup: 9) == nil)
        #expect((0..<8).allSatisfy { map.shard(ofGroup: map.group(of: $0)) == $0 })
    }
}
