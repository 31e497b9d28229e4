import Testing
@testable import ParleyRaft

@Suite struct SnapshotTests {
    /// A group where node 3 missed 30 entries that the leader then compacted away.
    static func laggingNetwork(chunk: Int) throws -> TestNetwork {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.snapshotChunkBytes = chunk }
        net.campaign(1)
        net.isolate(3)
        for i in 0..<30 { try net.node(1).propose(payload(i, size: 16)) }
        net.deliverAll()
        try net.compact(1)
        #expect(try net.storages[1]!.firstIndex() > net.node(3).status.lastIndex + 1)
        return net
    }

    @Test("DESIGN-I1 DESIGN-I2: a follower behind the leader's compacted log catches up by a chunked snapshot")
    func laggingFollowerGetsSnapshot() throws {
        let net = try Self.laggingNetwork(chunk: 64)
        net.heal()
        net.tickAll(5)
        let chunks = net.sent.filter { $0.kind == .snapshot && $0.to == 3 }
        let total = TestNetwork.encodeState(net.applied[1]!).count
        #expect(chunks.count >= (total + 63) / 64)
        #expect(chunks.allSatisfy { ($0.snapshot?.data.count ?? 0) <= 64 })
        #expect(net.applied[3] == net.applied[1])
        #expect(try net.storages[3]!.snapshot().metadata.index == net.storages[1]!.snapshot().metadata.index)
        // The restored snapshot had to be synced before the follower acknowledged it.
        #expect(net.unsyncedDurableReadies == 0)
        // Replication continues with ordinary appends afterwards.
        try net.node(1).propose(payload(100))
        net.deliverAll()
        #expect(net.applied[3]!.last == payload(100))
        #expect(net.node(1).status.progress[3]?.state == .replicate)
    }

    @Test("DESIGN-I1: an interrupted chunked transfer resumes from the offset the follower holds")
    func resumesInterruptedTransfer() throws {
        let net = try Self.laggingNetwork(chunk: 64)
        // Only the first three chunks get through.
        net.heal()
        net.dropIf = { $0.kind == .snapshot && $0.to == 3 && $0.snapshotOffset >= 192 }
        net.tickAll(4)
        #expect(net.node(3).raft.incomingSnapshot?.data.count == 192)
        #expect(net.applied[3]!.isEmpty)
        // The leader abandons the transfer (as after a transport error) and later starts it again.
        net.dropIf = nil
        net.node(1).reportSnapshot(3, success: false)
        let mark = net.sent.count
        net.tickAll(4)
        let offsets = net.sent[mark...].filter { $0.kind == .snapshot && $0.to == 3 }.map(\.snapshotOffset)
        // One probing chunk at 0, then straight on from 192: the held prefix is not sent again.
        #expect(offsets.first == 0)
        #expect(!offsets.dropFirst().contains { $0 < 192 })
        #expect(net.applied[3] == net.applied[1])
    }

    @Test("DESIGN-I1: a partial snapshot from one sender is not completed with another sender's bytes")
    func noSplicingAcrossSenders() throws {
        let net = try Self.laggingNetwork(chunk: 64)
        net.heal()
        net.dropIf = { $0.kind == .snapshot && $0.to == 3 && $0.snapshotOffset >= 192 }
        net.tickAll(4)
        let partial = try #require(net.node(3).raft.incomingSnapshot)
        #expect(partial.data.count == 192)
        // The same snapshot position, claimed by another sender, must start over from 0.
        var chunk = Message(kind: .snapshot, from: 2, to: 3, term: net.term(3),
                            snapshot: Snapshot(metadata: partial.metadata, data: [1, 2, 3]),
                            snapshotOffset: 192, snapshotTotalBytes: partial.total)
        try net.node(3).step(chunk)
        #expect(net.node(3).raft.incomingSnapshot?.data.count == 192)
        #expect(net.node(3).raft.incomingSnapshot?.from == 1)
        chunk.snapshotOffset = 0
        try net.node(3).step(chunk)
        #expect(net.node(3).raft.incomingSnapshot?.from == 2)
        #expect(net.node(3).raft.incomingSnapshot?.data == [1, 2, 3])
    }

    @Test("DESIGN-I1: a lost chunk in the middle is detected and resent")
    func lostChunkIsResent() throws {
        let net = try Self.laggingNetwork(chunk: 64)
        net.heal()
        var droppedOnce = false
        net.dropIf = { m in
            if m.kind == .snapshot && m.snapshotOffset == 320 && !droppedOnce {
                droppedOnce = true
                return true
            }
            return false
        }
        net.tickAll(6)
        #expect(droppedOnce)
        #expect(net.applied[3] == net.applied[1])
    }

    @Test("DESIGN-I1: a restarted node rebuilds its state from its snapshot and log")
    func restartFromSnapshot() throws {
        let net = try Self.laggingNetwork(chunk: 1 << 20)
        net.heal()
        net.tickAll(3)
        try net.node(1).propose(payload(199))
        net.deliverAll()
        try net.compact(3)
        try net.node(1).propose(payload(200))
        net.deliverAll()
        let before = net.applied[3]
        try net.restart(3)
        net.tickAll(2)
        #expect(net.applied[3] == before)
    }

    @Test("DESIGN-I2: MemoryStorage compacts, overwrites a divergent tail and limits bytes")
    func memoryStorage() throws {
        let s = MemoryStorage()
        try s.append((1...10).map { Entry(term: 1, index: $0, data: [UInt8($0)]) })
        #expect(try s.lastIndex() == 10)
        try s.append([Entry(term: 2, index: 6, data: [60])])
        #expect(try s.lastIndex() == 6)
        #expect(try s.term(at: 6) == 2)
        #expect(try s.entries(from: 1, to: 7, maxBytes: 2 * 25).count == 2)
        #expect(try s.entries(from: 1, to: 7, maxBytes: 0).count == 1)
        try s.createSnapshot(at: 4, confState: ConfState(voters: [1]), data: [4])
        try s.compact(upTo: 4)
        #expect(try s.firstIndex() == 5)
        #expect(try s.term(at: 4) == 1)
        #expect(throws: RaftStorageError.compacted) { try s.entries(from: 4, to: 6, maxBytes: .max) }
        #expect(throws: RaftStorageError.compacted) { try s.term(at: 3) }
        #expect(throws: RaftStorageError.unavailable) { try s.term(at: 7) }
        #expect(throws: RaftStorageError.snapshotOutOfDate) {
            try s.applySnapshot(Snapshot(metadata: SnapshotMetadata(index: 3, term: 1)))
        }
        try s.applySnapshot(Snapshot(metadata: SnapshotMetadata(index: 20, term: 3), data: [9]))
        #expect(try s.firstIndex() == 21)
        #expect(try s.lastIndex() == 20)
    }
}
