import ParleyRaft
import ParleyRooms
import Testing
@testable import ParleyCluster
@testable import ParleyHost

/// Issue 34: the reads a replica holds while Raft's read index and its own apply catch up.
struct PendingReadsTests {
    typealias Reads = PendingReads<String>

    func read(_ name: String, at tick: UInt64) -> Reads.Read { .init(waiter: name, index: nil, askedAt: tick) }

    @Test func aReadIsReadyOnceItsIndexIsAppliedInTheOrderAsked() {
        var reads = Reads(node: 7)
        let a = reads.add(read("a", at: 1)), b = reads.add(read("b", at: 1))
        #expect(a != b)
        #expect(reads.ready(applied: 100).isEmpty, "no index yet: not ready, however far applied")
        reads.indexed(b, at: 10)
        reads.indexed(a, at: 12)
        #expect(reads.ready(applied: 11).map(\.waiter) == ["b"])
        #expect(reads.ready(applied: 12).map(\.waiter) == ["a"])
        #expect(reads.isEmpty)
    }

    @Test func contextsAreTheNodesOwnAndOthersAreIgnored() {
        var mine = Reads(node: 7), theirs = Reads(node: 8)
        let m = mine.add(read("m", at: 1)), t = theirs.add(read("t", at: 1))
        #expect(m != t, "the same count on two nodes gives two contexts: a leader keeps both")
        mine.indexed(t, at: 5)
        #expect(mine.ready(applied: 5).isEmpty)
        mine.indexed([1, 2, 3], at: 5)  // garbage
        mine.indexed(m, at: 5)
        #expect(mine.ready(applied: 5).map(\.waiter) == ["m"])
    }

    @Test func oldReadsExpireWithOrWithoutTheirIndex() {
        var reads = Reads(node: 7)
        let a = reads.add(read("a", at: 1))
        _ = reads.add(read("b", at: 2))
        _ = reads.add(read("c", at: 30))
        reads.indexed(a, at: 50)  // indexed, but this replica has not applied that far
        #expect(reads.expired(askedBefore: 21).map(\.waiter) == ["a", "b"])
        #expect(reads.expired(askedBefore: nil).map(\.waiter) == ["c"])
        #expect(reads.isEmpty)
    }
}
