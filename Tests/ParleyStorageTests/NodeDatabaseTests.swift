import Foundation
import Testing
import ParleyRaft
import ParleyRooms
@testable import ParleyStorage
import ParleyWire
import ParleyRaftWire

/// A fresh database file in its own temporary folder.
func temporaryDatabasePath(_ name: String = "node") throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-storage-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent("\(name).sqlite").path
}

/// Entries `range` of `term`, each with a payload that names it (shared by the storage suites).
func entries(_ range: ClosedRange<LogIndex>, term: Term) -> [Entry] {
    range.map { Entry(term: term, index: $0, data: Array("e\($0)t\(term)".utf8)) }
}

/// Stages the logs' pending writes and commits them as one batch.
func commit(_ db: NodeDatabase, _ logs: DurableGroupLog...) throws {
    var batch = StorageBatch()
    for log in logs { log.stage(into: &batch) }
    try db.commit(batch)
}

@Suite struct NodeDatabaseTests {
    @Test func logAndHardStateSurviveReopen() throws {
        let path = try temporaryDatabasePath()
        do {
            let db = try NodeDatabase(path: path)
            let log = try db.createGroup(7, bootstrap: ConfState(voters: [1, 2, 3]))
            try log.append(entries(2...10, term: 2))
            log.setHardState(HardState(term: 2, vote: 3, commit: 8))
            try commit(db, log)
        }
        let log = try NodeDatabase(path: path).openGroup(7)
        #expect(try log.firstIndex() == 2)
        #expect(try log.lastIndex() == 10)
        #expect(try log.entries(from: 2, to: 11, maxBytes: .max) == entries(2...10, term: 2))
        #expect(log.hardState == HardState(term: 2, vote: 3, commit: 8))
        #expect(try log.initialState().1 == ConfState(voters: [1, 2, 3]))
        #expect(try log.term(at: 1) == 1)  // the bootstrap snapshot stands for index 1
    }

    @Test func aDurableDatabaseSyncsEveryCommitThatNeedsIt() throws {
        // FULL (2): the WAL is synced at each commit. GRDB's WAL set-up would leave NORMAL (1), which syncs only
        // at checkpoints — a power loss could then take acknowledged writes.
        #expect(try NodeDatabase(path: try temporaryDatabasePath()).synchronousSetting() == 2)
        #expect(try NodeDatabase(path: try temporaryDatabasePath(), durable: false).synchronousSetting() == 0)
    }

    @Test("DESIGN: a durable database's WAL has its blocks before the first commit, and a crash image opens intact")
    func theWALSpaceIsReservedAndACrashImageReadsBack() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let reserved = 32 + NodeDatabase.checkpointPages * 3 / 2 * (4096 + 24)
        func walSize(_ p: String) throws -> Int { try FileManager.default.attributesOfItem(atPath: p + "-wal")[.size] as! Int }
        #expect(try walSize(path) == reserved)
        let scratchPath = try temporaryDatabasePath()
        let scratch = try NodeDatabase(path: scratchPath, durable: false)  // tests' databases: no reservation
        #expect(try walSize(scratchPath) < reserved)
        withExtendedLifetime(scratch) {}
        let log = try db.createGroup(7, bootstrap: ConfState(voters: [1, 2, 3]))
        try log.append(entries(2...40, term: 2))
        log.setHardState(HardState(term: 2, vote: 3, commit: 30))
        try commit(db, log)
        #expect(try walSize(path) == reserved)  // written over the zeros, not past them
        // The files as a crash leaves them (the WAL not checkpointed, zeros after its last frame).
        let image = try temporaryDatabasePath()
        for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: path + suffix, toPath: image + suffix) }
        let reopened = try NodeDatabase(path: image).openGroup(7)
        #expect(try reopened.entries(from: 2, to: 41, maxBytes: .max) == entries(2...40, term: 2))
        #expect(reopened.hardState == HardState(term: 2, vote: 3, commit: 30))
    }

    @Test func reservingWALSpaceKeepsWhatTheFileHoldsAndNeverShortensIt() throws {
        let wal = try temporaryDatabasePath() + "-wal"
        try NodeDatabase.reserveWALSpace(path: wal, bytes: 100)  // no file yet: SQLite makes it
        #expect(!FileManager.default.fileExists(atPath: wal))
        try Data("frames".utf8).write(to: URL(fileURLWithPath: wal))
        try NodeDatabase.reserveWALSpace(path: wal, bytes: (1 << 20) + 10)
        let data = try Data(contentsOf: URL(fileURLWithPath: wal))
        #expect(data.count == (1 << 20) + 10)
        #expect(data.prefix(6) == Data("frames".utf8) && data.dropFirst(6).allSatisfy { $0 == 0 })
        try NodeDatabase.reserveWALSpace(path: wal, bytes: 50)
        #expect(try Data(contentsOf: URL(fileURLWithPath: wal)).count == (1 << 20) + 10)
    }

    @Test func onlyEntriesSnapshotsCompactionsAndNewTermsOrVotesNeedASync() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createGroup(3, bootstrap: ConfState(voters: [1, 2, 3]))
        func staged() -> StorageBatch {
            var batch = StorageBatch()
            log.stage(into: &batch)
            return batch
        }
        log.setHardState(HardState(term: 2, vote: 1, commit: 1))
        #expect(staged().needsSync)  // a new term and vote
        try log.append(entries(2...4, term: 2))
        #expect(staged().needsSync)  // entries
        log.setHardState(HardState(term: 2, vote: 1, commit: 3))
        let commitOnly = staged()
        #expect(!commitOnly.isEmpty && !commitOnly.needsSync)
        log.setHardState(HardState(term: 3, vote: 0, commit: 3))
        #expect(staged().needsSync)  // a new term
        // A relaxed (unsynced) commit is written like any other and leaves fsync on for the next one.
        log.setHardState(HardState(term: 3, vote: 0, commit: 4))
        try db.commit(staged())
        #expect(try db.synchronousSetting() == 2)
        #expect(try NodeDatabase(path: path).openGroup(3).hardState == HardState(term: 3, vote: 0, commit: 4))
    }

    @Test func aBatchOfCommitIndexesGoesWithALaterOneWhoseHardStatesWin() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let a = try db.createGroup(1, bootstrap: ConfState(voters: [1, 2, 3]))
        let b = try db.createGroup(2, bootstrap: ConfState(voters: [1, 2, 3]))
        for log in [a, b] {
            log.setHardState(HardState(term: 2, vote: 1, commit: 0))
            try log.append(entries(2...4, term: 2))
        }
        try commit(db, a, b)
        var early = StorageBatch()
        a.setHardState(HardState(term: 2, vote: 1, commit: 2))
        b.setHardState(HardState(term: 2, vote: 1, commit: 3))
        a.stage(into: &early)
        b.stage(into: &early)
        #expect(early.onlyCommitIndexes)
        var later = StorageBatch()
        a.setHardState(HardState(term: 2, vote: 1, commit: 4))
        try b.append(entries(5...5, term: 2))
        a.stage(into: &later)
        b.stage(into: &later)
        #expect(!later.onlyCommitIndexes)  // entries
        later.absorb(earlier: early)
        try db.commit(later)
        let reopened = try NodeDatabase(path: path)
        #expect(try reopened.openGroup(1).hardState.commit == 4)  // the later batch's own
        #expect(try reopened.openGroup(2).hardState.commit == 3)  // carried from the earlier one
        #expect(try reopened.openGroup(2).lastIndex() == 5)
        var history = StorageBatch()
        history.history = [RoomHistoryStore.Row(shard: 0, roomId: "r", item: .message(ChatMessage(
            seq: 1, serverId: 1, time: 1, senderId: "u", senderNickname: "", senderAvatar: "", senderRoomExt: "",
            type: .text, clientMessageId: "", body: "b", ext: "")))]
        #expect(!history.onlyCommitIndexes)
    }

    @Test func anAppendReplacesTheDivergentSuffix() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        try log.append(entries(2...10, term: 2))
        try commit(db, log)
        try log.append(entries(6...8, term: 3))
        try commit(db, log)
        let reopened = try NodeDatabase(path: path).openGroup(1)
        #expect(try reopened.lastIndex() == 8)
        #expect(try reopened.entries(from: 2, to: 9, maxBytes: .max) == entries(2...5, term: 2) + entries(6...8, term: 3))
    }

    @Test func overlappingAppendsInOneCycleKeepTheLaterOne() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        try log.append(entries(2...9, term: 2))
        try log.append(entries(5...6, term: 3))
        try commit(db, log)
        let reopened = try NodeDatabase(path: path).openGroup(1)
        #expect(try reopened.entries(from: 2, to: 7, maxBytes: .max) == entries(2...4, term: 2) + entries(5...6, term: 3))
        #expect(try reopened.lastIndex() == 6)
    }

    @Test func stagedWritesAreNotDurableUntilCommitted() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        try log.append(entries(2...4, term: 2))
        log.setHardState(HardState(term: 2, vote: 1, commit: 3))
        // No commit: a crash now must find the group as it was created.
        let reopened = try NodeDatabase(path: path).openGroup(1)
        #expect(try reopened.lastIndex() == 1)
        #expect(reopened.hardState == HardState(term: 1, vote: 0, commit: 1))
    }

    @Test func oneBatchCommitsManyGroupsAtOnce() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let logs = try (1...20).map { try db.createGroup(GroupID($0), bootstrap: ConfState(voters: [1, 2, 3])) }
        var batch = StorageBatch()
        for (i, log) in logs.enumerated() {
            try log.append(entries(2...LogIndex(2 + i), term: 2))
            log.stage(into: &batch)
        }
        #expect(batch.writes.map(\.group) == (1...20).map(GroupID.init))
        #expect(batch.entryCount == (1...20).reduce(0, +))
        try db.commit(batch)
        let reopened = try NodeDatabase(path: path)
        #expect(try reopened.groupIDs() == (1...20).map(GroupID.init))
        for i in 0..<20 {
            #expect(try reopened.openGroup(GroupID(i + 1)).lastIndex() == LogIndex(2 + i))
        }
    }

    @Test func snapshotAndCompactionRoundTrip() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createGroup(3, bootstrap: ConfState(voters: [1, 2, 3]))
        try log.append(entries(2...100, term: 4))
        let state = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try log.createSnapshot(at: 60, confState: ConfState(voters: [1, 2], learners: [4]), data: state)
        try log.compact(upTo: 60)
        try commit(db, log)

        let reopened = try NodeDatabase(path: path)
        let again = try reopened.openGroup(3)
        #expect(try again.firstIndex() == 61)
        #expect(try again.lastIndex() == 100)
        #expect(try again.term(at: 60) == 4)
        #expect(throws: RaftStorageError.compacted) { try again.entries(from: 59, to: 61, maxBytes: .max) }
        let snap = try again.snapshot()
        #expect(snap.metadata == SnapshotMetadata(index: 60, term: 4, confState: ConfState(voters: [1, 2], learners: [4])))
        #expect(snap.data == state)
        // Streamed in chunks, the snapshot reads back byte for byte.
        #expect(try reopened.snapshotSize(3) == state.count)
        var streamed: [UInt8] = []
        while streamed.count < state.count {
            streamed += try reopened.snapshotChunk(3, offset: streamed.count, length: 16_384)
        }
        #expect(streamed == state)
    }

    @Test func compactionBeyondTheSnapshotIsRefused() throws {
        let db = try NodeDatabase(path: try temporaryDatabasePath())
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        try log.append(entries(2...10, term: 2))
        #expect(throws: RaftStorageError.unavailable) { try log.compact(upTo: 5) }
    }

    @Test func aReceivedSnapshotReplacesTheLog() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createEmptyGroup(9)
        try log.append(entries(1...5, term: 1))
        try commit(db, log)
        let snap = Snapshot(metadata: SnapshotMetadata(index: 50, term: 6, confState: ConfState(voters: [1, 2, 3])),
                            data: [1, 2, 3])
        try log.applySnapshot(snap)
        try log.append(entries(51...52, term: 6))
        try commit(db, log)
        let again = try NodeDatabase(path: path).openGroup(9)
        #expect(try again.snapshot() == snap)
        #expect(try again.firstIndex() == 51)
        #expect(try again.entries(from: 51, to: 53, maxBytes: .max) == entries(51...52, term: 6))
    }

    @Test func aGapInTheLogIsReportedAsCorruption() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        try log.append(entries(2...10, term: 2))
        try commit(db, log)
        try db.deleteEntryForTesting(group: 1, index: 5)
        #expect(throws: StorageError.corrupt("group 1: log jumps from 4 to 6")) { try db.openGroup(1) }
    }

    @Test func unknownAndDuplicateGroups() throws {
        let db = try NodeDatabase(path: try temporaryDatabasePath())
        #expect(throws: StorageError.unknownGroup(4)) { try db.openGroup(4) }
        _ = try db.createGroup(4, bootstrap: ConfState(voters: [1]))
        #expect(throws: StorageError.groupExists(4)) { try db.createGroup(4, bootstrap: ConfState(voters: [1])) }
        try db.dropGroup(4, rows: [])
        #expect(try db.groupIDs().isEmpty)
    }

    /// Issue 17: a dropped group (its replica moved away) takes its state at once and its log rows soon after,
    /// with the freed rows, without touching another group's log.
    @Test func aDroppedGroupsRowsGoWithTheFreedRowsAndOthersStay() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let kept = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        let moved = try db.createGroup(2, bootstrap: ConfState(voters: [1]))
        for round in 0..<10 {
            let from = LogIndex(2 + round * 5)
            try kept.append(entries(from...(from + 4), term: 2))
            try moved.append(entries(from...(from + 4), term: 2))
            try commit(db, kept, moved)
        }
        let before = try db.logRowCount()
        #expect(moved.heldRows.count == 10)
        try db.dropGroup(2, rows: moved.heldRows)
        #expect(try db.groupIDs() == [1])
        #expect(db.mayHoldUnneededLogRows)
        var batch = StorageBatch()
        try kept.append(entries(52...52, term: 2))
        kept.stage(into: &batch)
        batch.deleteUnneededLogRows = 256
        try db.commit(batch)
        #expect(try db.logRowCount() == before - 10 + 1)
        let reopened = try NodeDatabase(path: path)
        #expect(try reopened.openGroup(1).entries(from: 2, to: 53, maxBytes: .max) == entries(2...52, term: 2))
        #expect(throws: StorageError.unknownGroup(2)) { try reopened.openGroup(2) }
    }

    @Test func membershipCodecRejectsGarbage() throws {
        let cs = ConfState(voters: [3, 1, 2], votersOutgoing: [1, 2, 4], learners: [9], learnersNext: [4], autoLeave: true)
        #expect(try ConfState(decoding: cs.encoded()) == cs)
        let bytes = cs.encoded()
        for cut in 0..<bytes.count {
            #expect(throws: CodecError.self) { try ConfState(decoding: Array(bytes[..<cut])) }
        }
        #expect(throws: CodecError.self) { try ConfState(decoding: bytes + [0]) }
        #expect(throws: CodecError.self) { try ConfState(decoding: [9] + bytes.dropFirst()) }
    }
}
