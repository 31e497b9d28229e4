import Testing
@testable import ParleySimulation

/// Known histories, linearizable and not (DESIGN invariants 1 and 4: acknowledged writes survive,
/// reads are never stale).
@Suite("Linearizability checker")
struct LinearizabilityCheckerTests {
    let checker = LinearizabilityChecker()

    private func isViolation(_ verdict: LinearizabilityVerdict) -> Bool {
        if case .violation = verdict { return true }
        return false
    }

    @Test("sequential put then get of the written value is linearizable")
    func sequential() {
        let history: [ClientOperation] = [
            .done(1, .put(key: 1, value: 10), .written, 0, 5),
            .done(2, .get(key: 1), .value(10), 6, 8),
            .done(2, .get(key: 2), .value(nil), 9, 10),
        ]
        #expect(checker.check(history) == .linearizable)
    }

    @Test("DESIGN inv 4: stale read after a completed overwrite is not linearizable")
    func staleRead() {
        let history: [ClientOperation] = [
            .done(1, .put(key: 1, value: 10), .written, 0, 5),
            .done(1, .put(key: 1, value: 11), .written, 6, 9),
            .done(2, .get(key: 1), .value(10), 10, 12),
        ]
        let verdict = checker.check(history)
        #expect(isViolation(verdict))
        guard case .violation(let key, _, let prefix) = verdict else { return }
        #expect(key == 1)
        #expect(prefix.count == 2)
    }

    @Test("DESIGN inv 1: a lost acknowledged write (read sees the initial value) is not linearizable")
    func lostWrite() {
        let history: [ClientOperation] = [
            .done(1, .put(key: 3, value: 7), .written, 0, 4),
            .done(2, .get(key: 3), .value(nil), 5, 6),
        ]
        #expect(isViolation(checker.check(history)))
    }

    @Test("DESIGN inv 4: reads out of real-time order (new value, then old value) are not linearizable")
    func readsOutOfOrder() {
        // The write overlaps both reads, but the reads do not overlap each other.
        let history: [ClientOperation] = [
            .done(1, .put(key: 1, value: 1), .written, 0, 1),
            .done(1, .put(key: 1, value: 2), .written, 2, 20),
            .done(2, .get(key: 1), .value(2), 3, 5),
            .done(3, .get(key: 1), .value(1), 6, 8),
        ]
        #expect(isViolation(checker.check(history)))
        // The same reads, overlapping each other, are fine.
        var overlapping = history
        overlapping[3].invokedAt = 4
        #expect(checker.check(overlapping) == .linearizable)
    }

    @Test("concurrent overlapping writes may be seen in either order")
    func concurrentWrites() {
        let history: [ClientOperation] = [
            .done(1, .put(key: 1, value: 1), .written, 0, 10),
            .done(2, .put(key: 1, value: 2), .written, 1, 9),
            .done(3, .get(key: 1), .value(1), 11, 12),
        ]
        #expect(checker.check(history) == .linearizable)
        var other = history
        other[2].output = .value(2)
        #expect(checker.check(other) == .linearizable)
        // But two later reads must agree on the final order.
        other.append(.done(3, .get(key: 1), .value(1), 13, 14))
        #expect(isViolation(checker.check(other)))
    }

    @Test("DESIGN inv 1: a pending (timed-out) write may be seen or not, but not unseen after seen")
    func pendingWrite() {
        let base: [ClientOperation] = [
            .done(1, .put(key: 1, value: 1), .written, 0, 2),
            .pending(2, .put(key: 1, value: 2), 3),
        ]
        let seen = base + [.done(3, .get(key: 1), .value(2), 100, 101)]
        let unseen = base + [.done(3, .get(key: 1), .value(1), 100, 101)]
        #expect(checker.check(seen) == .linearizable)
        #expect(checker.check(unseen) == .linearizable)
        let flipped = seen + [.done(3, .get(key: 1), .value(1), 102, 103)]
        #expect(isViolation(checker.check(flipped)))
        // A pending write cannot take effect before it was invoked.
        let early = base + [.done(3, .get(key: 1), .value(2), 0, 1)]
        #expect(isViolation(checker.check(early)))
    }

    @Test("cas follows the register: success only on the expected value; pending cas may apply")
    func compareAndSet() {
        let ok: [ClientOperation] = [
            .done(1, .put(key: 1, value: 1), .written, 0, 1),
            .done(1, .cas(key: 1, expected: 1, new: 5), .swapped(true), 2, 3),
            .done(2, .cas(key: 1, expected: 1, new: 6), .swapped(false), 4, 5),
            .done(2, .get(key: 1), .value(5), 6, 7),
        ]
        #expect(checker.check(ok) == .linearizable)
        var wrong = ok
        wrong[2].output = .swapped(true)
        #expect(isViolation(checker.check(wrong)))
        let pending: [ClientOperation] = [
            .done(1, .put(key: 1, value: 1), .written, 0, 1),
            .pending(1, .cas(key: 1, expected: 1, new: 9), 2),
            .done(2, .get(key: 1), .value(9), 10, 11),
        ]
        #expect(checker.check(pending) == .linearizable)
    }

    @Test("keys are checked separately; a violation names its key")
    func perKey() {
        let history: [ClientOperation] = [
            .done(1, .put(key: 1, value: 1), .written, 0, 1),
            .done(1, .put(key: 2, value: 2), .written, 2, 3),
            .done(2, .get(key: 1), .value(1), 4, 5),
            .done(2, .get(key: 2), .value(nil), 6, 7),
        ]
        guard case .violation(let key, let operations, _) = checker.check(history) else {
            Issue.record("expected a violation")
            return
        }
        #expect(key == 2)
        #expect(operations.count == 2)
    }

    @Test("a search bound gives .unknown instead of running on")
    func boundedSearch() {
        // Many concurrent writes and a final read that no order can explain: the search must try many orders.
        var history: [ClientOperation] = (0..<10).map { .done($0, .put(key: 1, value: $0), .written, 0, 100) }
        history.append(.done(99, .get(key: 1), .value(1000), 101, 102))
        let bounded = LinearizabilityChecker(maxStepsPerKey: 50)
        #expect(bounded.check(history) == .unknown(key: 1, steps: 51))
        #expect(isViolation(LinearizabilityChecker(maxStepsPerKey: 10_000_000).check(history)))
    }

    @Test("many concurrent clients with a long legal history stay cheap")
    func longHistory() {
        // 6 clients, 300 rounds of overlapping put/get where each get reads the latest completed write.
        var history: [ClientOperation] = []
        var time: UInt64 = 0
        for round in 0..<300 {
            history.append(.done(round % 6, .put(key: 1, value: round), .written, time, time + 3))
            history.append(.done((round + 1) % 6, .get(key: 1), .value(round), time + 2, time + 5))
            time += 4
        }
        #expect(checker.check(history) == .linearizable)
    }
}

@Suite("Linearizability checker: pending writes")
struct PendingWriteReductionTests {
    @Test("DESIGN inv 1: many unseen pending puts are dropped, seen ones kept, and cas keys left whole")
    func unseenPendingPutsDropped() {
        var history: [ClientOperation] = (0..<40).map { .pending($0, .put(key: 1, value: 100 + $0), UInt64($0)) }
        history.append(.done(99, .get(key: 1), .value(105), 50, 51))
        let reduced = LinearizabilityChecker.withoutUnseenPendingWrites(history)
        #expect(reduced.count == 2)
        #expect(reduced.contains(history[5]))
        // Forty unordered unknown writes stay cheap to check, and a read of a value never written still fails.
        #expect(LinearizabilityChecker(maxStepsPerKey: 10_000).check(history) == .linearizable)
        var bad = history
        bad.append(.done(99, .get(key: 1), .value(7), 52, 53))
        if case .violation = LinearizabilityChecker().check(bad) {} else { Issue.record("expected a violation") }
        let withCas = history + [.done(98, .cas(key: 1, expected: 1, new: 2), .swapped(false), 60, 61)]
        #expect(LinearizabilityChecker.withoutUnseenPendingWrites(withCas).count == withCas.count)
    }
}
