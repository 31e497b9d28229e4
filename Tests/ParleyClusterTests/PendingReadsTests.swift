import ParleyRaft
import ParleyRooms
import Testing
@testable import ParleyCluster

/// Issue 34: the reads a replica holds while Raft's read index and its own apply catch up.
struct PendingReadsTests {
    typealias Reads = PendingReads<String, String>

    func read(_ name: String, at tick: UInt64, into answers: Box) -> Reads.Read {
        .init(command: name, actor: .appServer, timestamp: 0, index: nil, askedAt: tick) { answers.values.append("\(name): \($0)") }
    }

    final class Box: @unchecked Sendable { var values: [String] = [] }

    @Test func aReadIsReadyOnceItsIndexIsAppliedInTheOrderAsked() {
        var reads = Reads(node: 7)
        let box = Box()
        let a = reads.add(read("a", at: 1, into: box)), b = reads.add(read("b", at: 1, into: box))
        #expect(a != b)
        #expect(reads.ready(applied: 100).isEmpty, "no index yet: not ready, however far applied")
        reads.indexed(b, at: 10)
        reads.indexed(a, at: 12)
        #expect(reads.ready(applied: 11).map(\.command) == ["b"])
        #expect(reads.ready(applied: 12).map(\.command) == ["a"])
        #expect(reads.isEmpty)
    }

    @Test func contextsAreTheNodesOwnAndOthersAreIgnored() {
        var mine = Reads(node: 7), theirs = Reads(node: 8)
        let box = Box()
        let m = mine.add(read("m", at: 1, into: box)), t = theirs.add(read("t", at: 1, into: box))
        #expect(m != t, "the same count on two nodes gives two contexts: a leader keeps both")
        mine.indexed(t, at: 5)
        #expect(mine.ready(applied: 5).isEmpty)
        mine.indexed([1, 2, 3], at: 5)  // garbage
        mine.indexed(m, at: 5)
        #expect(mine.ready(applied: 5).map(\.command) == ["m"])
    }

    @Test func oldReadsExpireWithOrWithoutTheirIndex() {
        var reads = Reads(node: 7)
        let box = Box()
        let a = reads.add(read("a", at: 1, into: box))
        _ = reads.add(read("b", at: 2, into: box))
        _ = reads.add(read("c", at: 30, into: box))
        reads.indexed(a, at: 50)  // indexed, but this replica has not applied that far
        #expect(reads.expired(askedBefore: 21).map(\.command) == ["a", "b"])
        #expect(reads.expired(askedBefore: nil).map(\.command) == ["c"])
        #expect(reads.isEmpty)
    }
}
