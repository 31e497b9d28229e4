import Testing
import ParleyCluster
import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyRaftWire

@Suite struct RaftWireCodecTests {
    static let sample: [RaftEnvelope] = [
        RaftEnvelope(group: 1, message: Message(kind: .heartbeat, from: 1, to: 2, term: 7, commit: 40, context: [1, 2])),
        RaftEnvelope(group: 64, message: Message(kind: .append, from: 1, to: 2, term: 7, logTerm: 6, index: 41,
            entries: [Entry(term: 7, index: 42, data: Array("hello".utf8)),
                      Entry(term: 7, index: 43, kind: .confChange, data: [9, 9])], commit: 41)),
        RaftEnvelope(group: 3, message: Message(kind: .appendResponse, from: 2, to: 1, term: 7, index: 12,
            reject: true, rejectHint: 10)),
        RaftEnvelope(group: 3, message: Message(kind: .snapshot, from: 1, to: 3, term: 8,
            snapshot: Snapshot(metadata: SnapshotMetadata(index: 500, term: 8,
                confState: ConfState(voters: [1, 2, 3], learners: [4], autoLeave: true)), data: [UInt8](repeating: 7, count: 3000)),
            snapshotOffset: 1_048_576, snapshotTotalBytes: 9_000_000)),
        RaftEnvelope(group: 3, message: Message(kind: .snapshotResponse, from: 3, to: 1, term: 8, index: 500,
            snapshotOffset: 1_051_576)),
        RaftEnvelope(group: 9, message: Message(kind: .vote, from: 3, to: 1, term: 9, logTerm: 8, index: 600,
            campaignTransfer: true)),
        RaftEnvelope(group: 9, message: Message(kind: .heartbeat, from: 1, to: 3, term: 9, quiesce: true)),
        RaftEnvelope(group: 9, message: Message(kind: .transferLeader, from: 2, to: 1, term: 9, transferee: 2)),
    ]

    @Test func aBatchRoundTrips() throws {
        #expect(try RaftWireCodec.decode(RaftWireCodec.encode(Self.sample)) == Self.sample)
        #expect(try RaftWireCodec.decode(RaftWireCodec.encode([])) == [])
    }

    @Test func everyTruncationAndBadByteThrowsCleanly() {
        let bytes = RaftWireCodec.encode(Self.sample)
        for cut in 0..<bytes.count where cut % 7 == 0 || cut < 64 {
            #expect(throws: CodecError.self) { try RaftWireCodec.decode(Array(bytes[..<cut])) }
        }
        #expect(throws: CodecError.self) { try RaftWireCodec.decode(bytes + [0]) }
        #expect(throws: CodecError.badVersion(2)) { try RaftWireCodec.decode([2] + bytes.dropFirst()) }
        // A forged count larger than the buffer could hold is refused before anything is allocated.
        #expect(throws: CodecError.self) { try RaftWireCodec.decode([1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) }
    }

    @Test func randomGarbageNeverTraps() {
        var random = SplitMix64(seed: 42)
        var decoded = 0
        for _ in 0..<5_000 {
            let n = random.next(upperBound: 200)
            var bytes = (0..<n).map { _ in UInt8(random.next(upperBound: 256)) }
            if !bytes.isEmpty { bytes[0] = 1 }
            if (try? RaftWireCodec.decode(bytes)) != nil { decoded += 1 }
        }
        #expect(decoded < 5_000)
    }
}
