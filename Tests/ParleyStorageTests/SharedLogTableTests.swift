import Foundation
import GRDB
import Testing
import ParleyRaft
import ParleyRooms
@testable import ParleyStorage
import ParleyRaftWire

/// What the host's deferred write does: deletes unneeded rows, `limit` at a time, until none are left.
private func deleteUnneededRows(_ db: NodeDatabase, limit: Int = 3) throws {
    while db.mayHoldUnneededLogRows {
        var batch = StorageBatch()
        batch.deleteUnneededLogRows = limit
        try db.commit(batch)
    }
}

/// A quiet group (1) with entries 2...3 and a busy one (2) that appends `busy` one entry per commit, taking a
/// snapshot every `snapshotEvery` entries; `afterEach` runs after every commit.
private func quietAndBusy(_ db: NodeDatabase, busy range: ClosedRange<LogIndex>, snapshotEvery: LogIndex,
                          afterEach: () throws -> Void = {}) throws -> (quiet: DurableGroupLog, busy: DurableGroupLog) {
    let quiet = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
    try quiet.append(entries(2...3, term: 2))
    let busy = try db.createGroup(2, bootstrap: ConfState(voters: [1]))
    try commit(db, quiet, busy)
    for i in range {
        try busy.append(entries(i...i, term: 2))
        if i % snapshotEvery == 0 { try busy.createSnapshot(at: i, confState: nil, data: [UInt8(truncatingIfNeeded: i)]) }
        try commit(db, quiet, busy)
        try afterEach()
    }
    return (quiet, busy)
}

/// Every group's log lives in one append-only table (`LogRow`): one row per group per commit.
/// Group 1 (to be kept busy by the test) and group 2, which holds entries 2...4 and writes nothing more;
/// both committed once.
private func busyAndQuietGroups(_ db: NodeDatabase) throws -> (busy: DurableGroupLog, quiet: DurableGroupLog) {
    let busy = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
    let quiet = try db.createGroup(2, bootstrap: ConfState(voters: [1]))
    try quiet.append(entries(2...4, term: 2))
    try commit(db, busy, quiet)
    return (busy, quiet)
}

@Suite struct SharedLogTableTests {
    @Test func aCommitWritesOneRowPerGroupHoweverManyEntries() throws {
        let db = try NodeDatabase(path: try temporaryDatabasePath())
        let logs = try (1...5).map { try db.createGroup(GroupID($0), bootstrap: ConfState(voters: [1])) }
        for log in logs { try log.append(entries(2...40, term: 2)) }
        var batch = StorageBatch()
        for log in logs { log.stage(into: &batch) }
        try db.commit(batch)
        #expect(try db.logRowCount() == 5)
        try logs[0].append(entries(41...41, term: 2))
        try commit(db, logs[0])
        #expect(try db.logRowCount() == 6)
    }

    @Test func aReceivedSnapshotNeverBringsBackTheEntriesItReplaced() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let log = try db.createEmptyGroup(9)
        try log.append(entries(1...60, term: 1))
        try commit(db, log)
        // The leader's snapshot at 50 (term 6) replaces this follower's divergent log; 51…60 must stay gone.
        try log.applySnapshot(Snapshot(metadata: SnapshotMetadata(index: 50, term: 6, confState: ConfState(voters: [1, 2, 3])),
                                       data: [7]))
        try commit(db, log)
        let again = try NodeDatabase(path: path).openGroup(9)
        #expect(try again.lastIndex() == 50 && again.firstIndex() == 51)
        #expect(try again.term(at: 50) == 6)
    }

    @Test func rowsNoGroupNeedsAreDeletedAndAQuietGroupIsRewrittenRatherThanPinningThem() throws {
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path, rewriteAfterRows: 8)
        let (busy, quiet) = try busyAndQuietGroups(db)
        for i: LogIndex in 2...65 {
            try busy.append(entries(i...i, term: 2))
            if i % 10 == 0 {
                try busy.createSnapshot(at: i, confState: nil, data: [UInt8(i)])
                try busy.compact(upTo: i - 2)
            }
            // As the host does: a group that pins old rows writes its few live entries again.
            for log in [busy, quiet] where log.pinsOldRows { #expect(try log.rewriteLiveEntries(maxBytes: 1_000)) }
            try commit(db, busy, quiet)  // the host stages every group each cycle, quiet ones too
            try deleteUnneededRows(db)
        }
        // Without deletion there would be 65 rows; the quiet group's first row would pin them all.
        #expect(try db.logRowCount() < 20)
        #expect(quiet.logFrom > 1)
        let reopened = try NodeDatabase(path: path)
        let q = try reopened.openGroup(2)
        #expect(try q.entries(from: 2, to: 5, maxBytes: .max) == entries(2...4, term: 2))
        let b = try reopened.openGroup(1)
        #expect(try b.firstIndex() == 61 && b.lastIndex() == 65)  // after the last snapshot (60)
        #expect(try b.entries(from: 61, to: 66, maxBytes: .max) == entries(61...65, term: 2))
    }

    @Test func aGroupDeletesItsOwnRowsBehindASnapshotWhateverTheOthersHold() throws {
        // A quiet group holds the oldest row, so no deletion by prefix can pass it: the busy group's rows
        // still go, freed by the snapshots that cover them and deleted by the deferred writes.
        let path = try temporaryDatabasePath()
        let db = try NodeDatabase(path: path)
        let (_, busy) = try quietAndBusy(db, busy: 2...40, snapshotEvery: 10) { try deleteUnneededRows(db) }
        // Only the quiet group's row: the busy group's last snapshot (40) covers all of its entries.
        #expect(try db.logRowCount() == 1)
        #expect(busy.bytesSinceSnapshot == 0)
        let reopened = try NodeDatabase(path: path)
        #expect(try reopened.openGroup(1).entries(from: 2, to: 4, maxBytes: .max) == entries(2...3, term: 2))
        let b = try reopened.openGroup(2)
        #expect(try b.snapshot().metadata.index == 40 && b.lastIndex() == 40)
        // The newest rows were deleted: numbering goes on past the busy group's `log_from`, not from the
        // quiet group's row, or the next row would be skipped when the group is opened.
        try b.append(entries(41...41, term: 2))
        try commit(reopened, b)
        #expect(try NodeDatabase(path: path).openGroup(2).entries(from: 41, to: 42, maxBytes: .max) == entries(41...41, term: 2))
    }

    @Test func rowsFreedButNotYetDeletedGoAfterARestart() throws {
        let path = try temporaryDatabasePath()
        do {
            let db = try NodeDatabase(path: path)
            _ = try quietAndBusy(db, busy: 2...20, snapshotEvery: 20)
            #expect(try db.logRowCount() == 20)  // freed by the snapshot at 20; the node stops before deleting them
        }
        let reopened = try NodeDatabase(path: path)
        _ = try reopened.openGroup(1)
        _ = try reopened.openGroup(2)
        #expect(reopened.mayHoldUnneededLogRows)
        try deleteUnneededRows(reopened)
        #expect(try reopened.logRowCount() == 1)
    }

    @Test("DESIGN: a group that keeps writing is never quiet, however old its rows; copying them would free nothing")
    func aGroupThatKeepsWritingIsNotQuiet() throws {
        let db = try NodeDatabase(path: try temporaryDatabasePath(), rewriteAfterRows: 8)
        let (busy, quiet) = try busyAndQuietGroups(db)
        for i: LogIndex in 2...30 {
            try busy.append(entries(i...i, term: 2))
            try commit(db, busy, quiet)
        }
        // Both need rows more than 8 rows old; only the one that wrote none of the newest is worth a rewrite.
        #expect(busy.pinsOldRows && quiet.pinsOldRows)
        #expect(!busy.isQuiet && quiet.isQuiet)
    }

    @Test func manyLiveEntriesAreNotRewritten() throws {
        let db = try NodeDatabase(path: try temporaryDatabasePath())
        let log = try db.createGroup(1, bootstrap: ConfState(voters: [1]))
        try log.append(entries(2...200, term: 2))
        try commit(db, log)
        #expect(try !log.rewriteLiveEntries(maxBytes: 100))  // ~1.5 KB live: the caller snapshots instead
        #expect(try log.rewriteLiveEntries(maxBytes: 10_000))
        try commit(db, log)
        #expect(try db.logRowCount() == 2 && db.mayHoldUnneededLogRows)
        try deleteUnneededRows(db)
        #expect(try db.logRowCount() == 1)  // the rewrite made the first row unneeded
        #expect(try NodeDatabase(path: db.path).openGroup(1).entries(from: 2, to: 201, maxBytes: .max) == entries(2...200, term: 2))
    }

    @Test func aDatabaseWithTheOldPerEntryTableIsMigrated() throws {
        let path = try temporaryDatabasePath()
        // The layout of migrations v1 and v2, written by hand as an older build left it.
        let old = try DatabaseQueue(path: path)
        try old.write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1-raft'), ('v2-room-history');
                CREATE TABLE raft_group (group_id INTEGER PRIMARY KEY, term INTEGER NOT NULL, vote INTEGER NOT NULL,
                                         commit_index INTEGER NOT NULL);
                CREATE TABLE raft_entry (group_id INTEGER NOT NULL, idx INTEGER NOT NULL, term INTEGER NOT NULL,
                                         kind INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (group_id, idx)) WITHOUT ROWID;
                CREATE TABLE raft_snapshot (group_id INTEGER PRIMARY KEY, idx INTEGER NOT NULL, term INTEGER NOT NULL,
                                            conf_state BLOB NOT NULL, data BLOB NOT NULL);
                CREATE TABLE room_history (room_id TEXT NOT NULL, seq INTEGER NOT NULL, shard INTEGER NOT NULL,
                    time INTEGER NOT NULL, type INTEGER NOT NULL, item BLOB NOT NULL, PRIMARY KEY (room_id, seq)) WITHOUT ROWID;
                CREATE INDEX room_history_time ON room_history (time);
                INSERT INTO raft_group VALUES (3, 2, 1, 4);
                """)
            for e in entries(1...4, term: 2) {
                try db.execute(sql: "INSERT INTO raft_entry VALUES (3, ?, ?, 0, ?)",
                               arguments: [Int64(e.index), Int64(e.term), Data(e.data)])
            }
            // Room history was kept in the node's database then.
            try db.execute(sql: "INSERT INTO room_history VALUES ('r', 7, 2, 500, ?, ?)",
                           arguments: [Int64(old7.messageType.rawValue), Data(old7.encoded())])
        }
        try old.close()
        let reopened = try NodeDatabase(path: path)
        let log = try reopened.openGroup(3)
        #expect(try log.entries(from: 1, to: 5, maxBytes: .max) == entries(1...4, term: 2))
        #expect(log.hardState == HardState(term: 2, vote: 1, commit: 4))
        // v4: the history moved to its own file.
        #expect(try reopened.history.since(roomId: "r", afterSeq: 0, belowSeq: .max, notBefore: 0, limit: 10) == [old7])
        #expect(FileManager.default.fileExists(atPath: NodeDatabase.historyPath(for: path)))
    }

    private let old7 = HistoryItem.message(ChatMessage(
        seq: 7, serverId: 7, time: 500, senderId: "u", senderNickname: "", senderAvatar: "", senderRoomExt: "",
        type: .text, clientMessageId: "", body: "kept", ext: ""))
}
