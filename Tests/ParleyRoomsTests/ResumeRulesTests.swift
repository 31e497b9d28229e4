import Testing
@testable import ParleyRooms

/// X2: a reconnecting client resumes by room sequence number from history.
@Suite struct ResumeRulesTests {
    static func sent(_ shard: inout TestShard, _ n: Int) -> [UInt64] {
        (0..<n).map { i in
            guard case .messageSent(let seq, _, _)? = shard.user("carol", .sendMessage(SendMessage(roomId: "r1", body: "m\(i)"))).reply
            else { return 0 }
            return seq
        }
    }

    @Test func X2_historySinceReturnsItemsAfterTheSeqInOrderAndRoomInfoCarriesTheLatestSeq() {
        var shard = TestShard.populated()
        let seqs = Self.sent(&shard, 10)
        #expect(seqs == seqs.sorted() && Set(seqs).count == 10)
        guard case .history(let items)? = shard.user("dave", .historySince(roomId: "r1", afterSeq: seqs[3], limit: 100)).reply
        else { Issue.record("no history"); return }
        #expect(items.map(\.seq) == Array(seqs[4...]))
        guard case .history(let first)? = shard.user("dave", .historySince(roomId: "r1", afterSeq: seqs[3], limit: 2)).reply
        else { Issue.record("no history"); return }
        #expect(first.map(\.seq) == [seqs[4], seqs[5]])
        guard case .roomInfo(let view)? = shard.user("dave", .fetchRoomInfo(roomId: "r1")).reply else {
            Issue.record("no info"); return
        }
        #expect(view.seq == seqs.last!)
        guard case .history(let none)? = shard.user("dave", .historySince(roomId: "r1", afterSeq: view.seq, limit: 10)).reply
        else { Issue.record("no history"); return }
        #expect(none.isEmpty)
    }

    @Test func X2_aResumeFromBeforeWhatRetentionDroppedIsHistoryGoneAndSurvivesASnapshot() throws {
        var limits = RoomLimits()
        limits.maxHistoryPerRoom = 5
        var shard = TestShard(limits: limits)
        shard.createRoom()
        shard.enter("owner")
        let seqs = Self.sent2(&shard, 12)
        shard.expectRejected(.historySince(roomId: "r1", afterSeq: seqs[2], limit: 10), as: TestShard.session("owner"),
                             .historyGone)
        // From the oldest kept item's predecessor on, the resume is complete.
        guard case .history(let items)? = shard.user("owner", .historySince(roomId: "r1", afterSeq: seqs[6], limit: 10)).reply
        else { Issue.record("no history"); return }
        #expect(items.map(\.seq) == Array(seqs[7...]))
        let restored = try RoomsState(restoring: shard.state.snapshot())
        #expect(restored.snapshot() == shard.state.snapshot())
        #expect(restored.rooms["r1"]!.droppedThroughSeq == shard.state.rooms["r1"]!.droppedThroughSeq)
    }

    static func sent2(_ shard: inout TestShard, _ n: Int) -> [UInt64] {
        (0..<n).map { i in
            guard case .messageSent(let seq, _, _)? = shard.user("owner", .sendMessage(SendMessage(roomId: "r1", body: "m\(i)"))).reply
            else { return 0 }
            return seq
        }
    }

    @Test func X2_badResumeRequestsAreRefused() {
        var shard = TestShard.populated()
        _ = Self.sent(&shard, 3)
        shard.expectRejected(.historySince(roomId: "r1", afterSeq: 0, limit: 0), as: TestShard.session("dave"), .badParameter)
        shard.expectRejected(.historySince(roomId: "r1", afterSeq: 0, limit: 1001), as: TestShard.session("dave"), .badParameter)
        shard.expectRejected(.historySince(roomId: "r1", afterSeq: 0, limit: 10), as: TestShard.session("zed"), .notEntered)
        shard.expectRejected(.historySince(roomId: "nope", afterSeq: 0, limit: 10), as: TestShard.session("dave"), .roomNotFound)
    }

    /// Room r1 with a and c on edge e2, b on edge e1.
    static func twoEdges() -> TestShard {
        var shard = TestShard()
        shard.createRoom()
        shard.enter("a", edge: "e2")
        shard.enter("b", edge: "e1")
        shard.enter("c", edge: "e2")
        return shard
    }

    @Test func edgesWithSessionsListsEachEdgeOnceSorted() {
        var shard = Self.twoEdges()
        #expect(shard.state.edgesWithSessions == ["e1", "e2"])
        shard.run(.sessionLost(edgeId: "e2"))
        #expect(shard.state.edgesWithSessions == ["e1"])
    }

    /// Issue 16: the sessions a lost edge lease ends are told so, each by a `lost` status to that session
    /// alone (its client may still be connected), while an exit still gets `quit`.
    @Test func aSessionEndedWithItsEdgeLeaseIsToldItIsLost() {
        var shard = Self.twoEdges()
        let lost = shard.run(.sessionLost(edgeId: "e2"))
        let told = lost.events.filter { if case .status(.lost) = $0.kind { true } else { false } }
        #expect(told.map(\.audience) == [.sessions(["a#1"]), .sessions(["c#1"])])
        #expect(told.allSatisfy { $0.seq == 0 && $0.roomId == "r1" })
        let exit = shard.run(.exit(roomId: "r1"), as: TestShard.session("b", edge: "e1"))
        #expect(exit.events.contains { $0.kind == .status(.quit) && $0.audience == .sessions(["b#1"]) })
        #expect(!exit.events.contains { $0.kind == .status(.lost) })
    }
}

/// A client may resend a message whose answer it never got: the same sender and clientMessageId answer with
/// the first send's seq and time, and nothing is sent twice.
@Suite struct ResendRulesTests {
    @Test func N1_aResendWithTheSameClientMessageIdIsAnsweredWithTheFirstResultAndChangesNothing() throws {
        var shard = TestShard.populated()
        let send = SendMessage(roomId: "r1", clientMessageId: "c-1", body: "hello")
        let first = shard.user("carol", .sendMessage(send))
        let before = shard.state.snapshot()
        let again = shard.user("carol", .sendMessage(send))
        #expect(again.reply == first.reply && again.events.isEmpty)
        #expect(shard.state.snapshot() == before)
        // Another sender with the same id, or no id, is a new message.
        #expect(shard.user("boss", .sendMessage(send)).events.count == 1)
        #expect(shard.user("carol", .sendMessage(SendMessage(roomId: "r1", body: "hello"))).events.count == 1)
        // The index survives a snapshot round trip (it is rebuilt from history).
        var restored = TestShard()
        restored.state = try RoomsState(restoring: shard.state.snapshot())
        restored.time = shard.time
        restored.index = shard.index
        let third = restored.user("carol", .sendMessage(send))
        #expect(third.reply == first.reply && third.events.isEmpty)
    }

    @Test func N1_onceTheFirstSendLeftHistoryTheIdIsFreeAgain() {
        var limits = RoomLimits()
        limits.maxHistoryPerRoom = 3
        var shard = TestShard(limits: limits)
        shard.createRoom()
        shard.enter("owner")
        let send = SendMessage(roomId: "r1", clientMessageId: "dup", body: "x")
        let first = shard.user("owner", .sendMessage(send))
        for i in 0..<3 { shard.user("owner", .sendMessage(SendMessage(roomId: "r1", body: "\(i)"))) }
        #expect(shard.state.rooms["r1"]!.sentMessages.isEmpty)
        let again = shard.user("owner", .sendMessage(send))
        #expect(again.events.count == 1 && again.reply != first.reply)
    }
}
