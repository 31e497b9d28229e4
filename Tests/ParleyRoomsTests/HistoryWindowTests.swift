import Testing
@testable import ParleyRooms

/// SPEC D1: the rooms' recent-history windows of a shard bounded by bytes, all together, the same on every
/// replica (restored from a snapshot or not).
@Suite struct HistoryWindowTests {
    static let bound = 64 << 10
    static let body = String(repeating: "x", count: 1_000)

    /// Three rooms, each with its owner in it.
    static func shard(bound: Int? = HistoryWindowTests.bound) -> TestShard {
        var shard = TestShard()
        for r in ["a", "b", "c"] {
            shard.createRoom(r, creator: "owner-\(r)")
            shard.enter("owner-\(r)", r)
        }
        if let bound { #expect(shard.run(.setHistoryWindow(bytes: bound)).isSuccess) }
        return shard
    }

    @discardableResult
    static func send(_ shard: inout TestShard, _ room: String, _ i: Int, id: String? = nil) -> UInt64 {
        let m = SendMessage(roomId: room, clientMessageId: id ?? "\(room)-\(i)", body: body + "\(i)")
        guard case .messageSent(let seq, _, _)? = shard.user("owner-\(room)", .sendMessage(m)).reply else { return 0 }
        return seq
    }

    static func windowSum(_ state: RoomsState) -> Int {
        state.roomIds.reduce(0) { $0 + state.rooms[$1]!.history.reduce(0) { $0 + $1.estimatedBytes } }
    }

    @Test func D1_theShardsWindowsStayWithinTheBoundAndTheOldestItemOfTheShardGoesFirst() {
        var shard = Self.shard()
        for i in 0..<300 { Self.send(&shard, ["a", "b", "c"][i % 3], i) }
        let state = shard.state
        #expect(state.windowBytes <= Self.bound)
        #expect(state.windowBytes == Self.windowSum(state))
        // About 1.3 KB an item: the bound holds a few dozen of the 300 (and the notifications of the enters).
        let held = state.roomIds.map { state.rooms[$0]!.history.count }
        #expect(held.reduce(0, +) > 30 && held.reduce(0, +) < 64)
        // Round-robin sends: each room keeps about a third, and every dropped item is older than every kept one.
        for r in ["a", "b", "c"] {
            let room = state.rooms[r]!
            #expect(room.history.count >= 10)
            #expect(room.droppedThroughSeq > 0)
        }
        let oldestKept = state.roomIds.compactMap { state.rooms[$0]!.history.first?.time }.min()!
        let times = state.roomIds.flatMap { state.rooms[$0]!.history.map(\.time) }
        #expect(times.allSatisfy { $0 >= oldestKept })
        // X2: a resume from before the window is told the history is gone here (the node completes it from
        // its store); one from inside it is answered.
        let window = state.historyWindow(roomId: "a")!
        shard.expectRejected(.historySince(roomId: "a", afterSeq: 1, limit: 10), as: TestShard.session("owner-a"),
                             .historyGone)
        guard case .history(let items)? = shard.user("owner-a", .historySince(roomId: "a", afterSeq: window.oldestSeq! - 1, limit: 100)).reply
        else { Issue.record("no history"); return }
        #expect(items.first?.seq == window.oldestSeq)
    }

    @Test func D1_aBusyRoomTakesTheWindowFromAQuietOneOnlyByAge() {
        var shard = Self.shard()
        Self.send(&shard, "a", 0)
        for i in 1...200 { Self.send(&shard, "b", i) }
        // The quiet room's message was the shard's oldest: it left first.
        #expect(shard.state.rooms["a"]!.history.allSatisfy { if case .message = $0 { false } else { true } })
        #expect(shard.state.windowBytes <= Self.bound)
    }

    @Test func D1_aReplicaRestoredFromASnapshotDropsExactlyWhatTheOtherDrops() throws {
        var whole = Self.shard()
        var copies: [TestShard] = []
        for i in 0..<400 {
            if i % 97 == 50 {
                var copy = whole
                copy.state = try RoomsState(restoring: whole.state.snapshot())
                copies.append(copy)
            }
            // Each applies the same command with the same index and time.
            Self.send(&whole, ["a", "b", "c", "c"][i % 4], i)
            for j in copies.indices { Self.send(&copies[j], ["a", "b", "c", "c"][i % 4], i) }
        }
        #expect(copies.count == 4)
        for copy in copies {
            for r in ["a", "b", "c"] {
                let mine = copy.state.rooms[r]!, theirs = whole.state.rooms[r]!
                #expect(mine.history.map(\.seq) == theirs.history.map(\.seq), "room \(r)")
                #expect(mine.droppedThroughSeq == theirs.droppedThroughSeq && mine.seq == theirs.seq, "room \(r)")
            }
            let same = copy.state.snapshot() == whole.state.snapshot()
            #expect(same)
            #expect(copy.state.windowBytes == whole.state.windowBytes)
        }
    }

    @Test func D1_aResendIsRecognizedWhileItsOriginalIsInTheWindow() {
        var shard = Self.shard()
        let first = Self.send(&shard, "a", 0, id: "once")
        #expect(Self.send(&shard, "a", 1, id: "once") == first)
        for i in 2..<200 { Self.send(&shard, "b", i) }
        // The original left the window: a resend now is a new message (docs/api.md says so).
        #expect(Self.send(&shard, "a", 1, id: "once") > first)
    }

    @Test func D1_withoutABoundTheSnapshotIsVersion5ByteForByteAndWithOneVersion6() throws {
        var unbounded = Self.shard(bound: nil)
        for i in 0..<80 { Self.send(&unbounded, "a", i) }
        let old = unbounded.state.snapshot()
        #expect(old[4] == 5)
        #expect(try RoomsState(restoring: old).historyWindowBytes == 0)
        #expect(unbounded.state.rooms["a"]!.history.count == 81)  // the enter and every message

        #expect(unbounded.run(.setHistoryWindow(bytes: Self.bound)).isSuccess)
        let new = unbounded.state.snapshot()
        #expect(new[4] == 6)
        let restored = try RoomsState(restoring: new)
        #expect(restored.historyWindowBytes == Self.bound)
        #expect(restored.windowBytes == unbounded.state.windowBytes)
        #expect(unbounded.state.windowBytes <= Self.bound)
        #expect(unbounded.state.rooms["a"]!.history.count < 81)

        // Lifting the bound again writes version 5 again.
        #expect(unbounded.run(.setHistoryWindow(bytes: 0)).isSuccess)
        #expect(unbounded.state.snapshot()[4] == 5)
    }

    @Test func D1_onlyTheClusterSetsTheBoundAndOnlyWithinItsRange() {
        var shard = Self.shard(bound: nil)
        shard.expectRejected(.setHistoryWindow(bytes: Self.bound), as: TestShard.session("owner-a"), .noPermission)
        shard.expectRejected(.setHistoryWindow(bytes: 1_000), .badParameter)
        shard.expectRejected(.setHistoryWindow(bytes: -1), .badParameter)
        shard.expectRejected(.setHistoryWindow(bytes: (1 << 40) + 1), .badParameter)
    }

    @Test func D1_theCommandRoundTripsThroughItsCodec() throws {
        let command = RoomCommand.setHistoryWindow(bytes: 1 << 20)
        #expect(try RoomCommand(decoding: command.encoded()) == command)
    }
}
