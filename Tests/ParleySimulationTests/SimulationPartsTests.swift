import ParleyRaft
import Testing
@testable import ParleySimulation

@Suite("Simulation parts")
struct SimulationPartsTests {
    private func entry(_ index: LogIndex, _ term: Term, _ byte: UInt8 = 0) -> Entry {
        Entry(term: term, index: index, data: [byte])
    }

    @Test("DESIGN inv 1: a crash keeps synced writes and only a prefix of unsynced ones")
    func diskCrash() throws {
        var disk = SimulatedDisk(bootstrap: nil, hardState: HardState())
        disk.write(.entry(entry(1, 1)))
        disk.write(.hardState(HardState(term: 1, vote: 1, commit: 1)))
        disk.sync()
        disk.write(.entry(entry(2, 1)))
        disk.write(.entry(entry(3, 1)))
        disk.write(.hardState(HardState(term: 2, vote: 0, commit: 3)))
        disk.crash(survivors: 1)
        #expect(disk.durable.entries.map(\.index) == [1, 2])
        #expect(disk.durable.hardState == HardState(term: 1, vote: 1, commit: 1))
        let storage = try disk.recover()
        #expect(try storage.lastIndex() == 2)
        // A later entry at an existing index replaces the tail, as a diverged follower's log does.
        disk.write(.entry(entry(2, 3, 9)))
        disk.sync()
        #expect(disk.durable.entries.map(\.term) == [1, 3])
    }

    @Test("DESIGN inv 1: compaction keeps the snapshot and the entries after it across a restart")
    func diskCompaction() throws {
        var disk = SimulatedDisk(bootstrap: nil, hardState: HardState())
        for index in 1...5 { disk.write(.entry(entry(LogIndex(index), 1))) }
        disk.write(.hardState(HardState(term: 1, vote: 0, commit: 4)))
        let snapshot = Snapshot(metadata: SnapshotMetadata(index: 3, term: 1, confState: ConfState(voters: [1])),
                                data: [1, 2, 3])
        disk.compact(to: snapshot)
        #expect(disk.unsynced.isEmpty)
        let storage = try disk.recover()
        #expect(try storage.firstIndex() == 4)
        #expect(try storage.lastIndex() == 5)
        #expect(try storage.snapshot() == snapshot)
        #expect(try storage.initialState().0.commit == 4)
    }

    @Test("DESIGN inv 2: the monitor flags two leaders in one term, diverging logs and diverging applies")
    func monitorViolations() {
        var monitor = SafetyMonitor()
        #expect(throws: Never.self) {
            try monitor.observeLeader(1, term: 2, firstIndex: 1, lastIndex: 0) { _ in nil }
        }
        #expect(throws: InvariantViolation.self) {
            try monitor.observeLeader(2, term: 2, firstIndex: 1, lastIndex: 0) { _ in nil }
        }
        #expect(throws: Never.self) { try monitor.observeAppend(1, entry: entry(5, 2, 1), previousTerm: 1) }
        #expect(throws: InvariantViolation.self) { try monitor.observeAppend(2, entry: entry(5, 2, 1), previousTerm: 2) }
        #expect(throws: InvariantViolation.self) { try monitor.observeAppend(2, entry: entry(5, 2, 7), previousTerm: 1) }
        #expect(throws: Never.self) {
            try monitor.observeApply(1, entry: entry(5, 2, 1), currentTerm: 2, stateDigest: 10)
        }
        #expect(throws: InvariantViolation.self) {
            try monitor.observeApply(2, entry: entry(5, 3, 1), currentTerm: 3, stateDigest: 10)
        }
        #expect(throws: InvariantViolation.self) {
            try monitor.observeApply(2, entry: entry(5, 2, 1), currentTerm: 3, stateDigest: 11)
        }
        // Leader completeness: a leader of a later term lacking the committed entry.
        #expect(throws: InvariantViolation.self) {
            try monitor.observeLeader(3, term: 4, firstIndex: 1, lastIndex: 4) { _ in 1 }
        }
        #expect(throws: InvariantViolation.self) {
            try monitor.observeLeader(3, term: 5, firstIndex: 1, lastIndex: 6) { $0 == 5 ? 1 : 2 }
        }
        #expect(throws: Never.self) {
            try monitor.observeLeader(3, term: 6, firstIndex: 1, lastIndex: 6) { $0 == 5 ? 2 : 1 }
        }
    }

    @Test("DESIGN inv 2: the register state machine applies a repeated request once and survives a snapshot")
    func stateMachine() throws {
        var machine = RegisterStateMachine()
        #expect(machine.apply(RegisterCommand(client: 1, request: 1, input: .put(key: 0, value: 5))) == .written)
        #expect(machine.apply(RegisterCommand(client: 2, request: 1, input: .put(key: 0, value: 6))) == .written)
        // The first put reaches the log again (a duplicated forward): no effect, same answer.
        #expect(machine.apply(RegisterCommand(client: 1, request: 1, input: .put(key: 0, value: 5))) == .written)
        #expect(machine.read(0) == 6)
        #expect(machine.apply(RegisterCommand(client: 1, request: 2, input: .cas(key: 0, expected: 6, new: 7)))
            == .swapped(true))
        let restored = try RegisterStateMachine(decoding: machine.encoded())
        #expect(restored == machine)
        #expect(restored.digest == machine.digest)
        let command = RegisterCommand(client: 3, request: 9, input: .cas(key: 2, expected: nil, new: 1))
        #expect(try RegisterCommand(decoding: command.encoded()) == command)
    }
}
