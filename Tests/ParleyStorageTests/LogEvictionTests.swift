import Foundation
import Testing
import ParleyRaft
@testable import ParleyStorage
import ParleyRaftWire

/// SPEC D1: a group's log entries leave memory once applied and come back from its rows when asked for —
/// the same entries, whatever rows they were written in (a follower's replaced suffix, a rewrite).
@Suite struct LogEvictionTests {
    @Test func D1_evictedEntriesAreReadBackFromTheirRowsExactly() throws {
        let db = try NodeDatabase(path: try temporaryDatabasePath())
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        // Three rows; the third replaces the second's last two entries (a new leader's).
        try log.append(entries(2...10, term: 2))
        try commit(db, log)
        try log.append(entries(11...20, term: 2))
        try commit(db, log)
        try log.append(entries(19...30, term: 3))
        try commit(db, log)
        let before = try log.entries(from: 2, to: 31, maxBytes: .max)
        let held = log.heldBytes

        log.evict(through: 25)
        #expect(log.evictedThrough == 25)
        #expect(held - log.heldBytes == before.prefix(24).reduce(0) { $0 + $1.byteSize })
        #expect(try log.term(at: 20) == 3 && log.term(at: 18) == 2)  // terms stay in memory
        #expect(try log.entries(from: 2, to: 31, maxBytes: .max) == before)
        #expect(try log.entries(from: 17, to: 23, maxBytes: .max) == Array(before[15..<21]))
        #expect(try log.entries(from: 3, to: 6, maxBytes: .max) == Array(before[1..<4]))  // the first row alone
        // The byte limit still holds (at least one entry), across the evicted and the held part.
        let limited = try log.entries(from: 24, to: 31, maxBytes: 1)
        #expect(limited == [before[22]])
        let across = try log.entries(from: 24, to: 31, maxBytes: before[22...24].reduce(0) { $0 + $1.byteSize })
        #expect(across == Array(before[22...24]))

        // A rewrite of the live entries reads the evicted ones back and writes them as one row.
        #expect(try log.rewriteLiveEntries(maxBytes: 1 << 20))
        try commit(db, log)
        #expect(log.heldRows.count == 1)
        #expect(try log.entries(from: 2, to: 31, maxBytes: .max) == before)
        // Reopened, the group holds them all in memory again, the same.
        let reopened = try NodeDatabase(path: db.path).openGroup(1)
        #expect(try reopened.entries(from: 2, to: 31, maxBytes: .max) == before)
    }

    @Test func D1_aReopenedGroupHoldsOnlyItsUncommittedTailAndReadsTheRestBack() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        try log.append(entries(2...25, term: 2))
        try commit(db, log)
        try log.append(entries(20...40, term: 3))  // a new leader's, replacing 20...25
        log.setHardState(HardState(term: 3, vote: 1, commit: 30))
        try commit(db, log)
        let before = try log.entries(from: 2, to: 41, maxBytes: .max)
        #expect(before[18].term == 3)

        let reopened = try NodeDatabase(path: path).openGroup(1)
        #expect(reopened.evictedThrough == 30)
        #expect(reopened.heldBytes == before.suffix(10).reduce(0) { $0 + $1.byteSize })  // 31...40 only
        #expect(try reopened.entries(from: 2, to: 41, maxBytes: .max) == before)
        // Applying after a restart reads the committed ones back a batch at a time.
        let batch = try reopened.entries(from: 2, to: 31, maxBytes: 3 * before[0].byteSize)
        #expect(batch == Array(before[0..<3]))
    }

    @Test func D1_evictedEntriesBehindASnapshotAreCompactedNotReadBack() throws {
        let db = try NodeDatabase(path: try temporaryDatabasePath())
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        try log.append(entries(2...40, term: 2))
        try commit(db, log)
        log.evict(through: 30)
        try log.createSnapshot(at: 35, confState: nil, data: [1, 2, 3])
        try commit(db, log)
        // The snapshot freed the row; asking for an entry at or before it says compacted (send the snapshot).
        #expect(throws: RaftStorageError.compacted) { try log.entries(from: 20, to: 25, maxBytes: .max) }
        #expect(try log.entries(from: 36, to: 41, maxBytes: .max) == entries(36...40, term: 2))
    }
}
