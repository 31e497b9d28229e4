import Testing
import ParleyIM

/// Issue 19 item 4 (one-to-one messaging) with seed 004's blocklist and do-not-disturb: a message is applied
/// on the receiver's shard, stored in the receiver's log and, by an effect, in the sender's; devices sync
/// both by their user's sequence.
@Suite struct P2PMessageTests {
    @Test("P2P: the receiver's devices get the message with the receiver's seq; the sender's log gets the copy with the same receiverSeq")
    func messageAndCopy() throws {
        var world = ImWorld()
        let sent = try world.send("amy", P2PSend(to: "tom", clientMessageId: "c1", body: "hello")).get()
        #expect(sent.seq == 1)
        let received = world.items(of: "tom")
        #expect(received.count == 1 && received[0].seq == 1)
        guard case .message(let m, let alert) = received[0].kind else { Issue.record("not a message"); return }
        #expect(m.from == "amy" && m.to == "tom" && m.body == "hello" && m.receiverSeq == 1 && alert)
        let copy = world.items(of: "amy")
        #expect(copy.count == 1, "the sender's other devices hear of it")
        guard case .message(let c, _) = copy[0].kind else { Issue.record("not a message"); return }
        #expect(c == m, "the same message, receiverSeq included")
        #expect(world.shards.allSatisfy { $0.outbox.isEmpty })
    }

    @Test("P2P: a resend with the same clientMessageId answers the first send's seq and stores nothing twice")
    func resendIsAnsweredOnce() throws {
        var world = ImWorld()
        let first = try world.send("amy", P2PSend(to: "tom", clientMessageId: "c1", body: "hello")).get()
        let again = try world.send("amy", P2PSend(to: "tom", clientMessageId: "c1", body: "hello")).get()
        #expect(again.seq == first.seq && again.time == first.time && again.events.isEmpty)
        #expect(world.user("tom").log.entries.count == 1 && world.user("amy").log.entries.count == 1)
        // Another sender's same id is another message.
        #expect(try world.send("ned", P2PSend(to: "tom", clientMessageId: "c1", body: "hi")).get().seq == 2)
    }

    @Test("004 Blocklist: a blocked user's message is refused 14201, stored nowhere, and the receiver hears nothing")
    func blockedSenderIsRefused() {
        var world = ImWorld()
        world.run("tom", .setBlocked(target: "amy", true))
        let before = world.shards.map { $0.snapshot() }
        #expect(world.send("amy", P2PSend(to: "tom", clientMessageId: "c1", body: "hello")).failureCode == .blocked)
        #expect(world.shards.map { $0.snapshot() } == before)
        #expect(world.items(of: "tom").isEmpty)
        world.run("tom", .setBlocked(target: "amy", false))
        #expect(world.send("amy", P2PSend(to: "tom", clientMessageId: "c1", body: "hello")).failureCode == nil)
    }

    @Test("004 Do Not Disturb: a muted user's message is delivered and kept for sync, flagged no alert")
    func mutedSenderHasNoAlert() throws {
        var world = ImWorld()
        world.run("tom", .setMuted(target: "amy", true))
        try world.send("amy", P2PSend(to: "tom", clientMessageId: "c1", body: "quiet")).get()
        guard case .message(_, let alert) = world.items(of: "tom").last?.kind else { Issue.record("not delivered"); return }
        #expect(!alert)
        #expect(world.user("tom").log.entries.count == 1)
    }

    @Test("Sync: a device that logs in gets what it missed after its last seq, in order, no duplicates, in pages")
    func syncBySequence() throws {
        var world = ImWorld()
        world.run("amy", .friend(.request, target: "tom", message: "hi"))   // tom's seq 1: a notification
        for i in 1...7 { try world.send(i % 2 == 0 ? "amy" : "ned", P2PSend(to: "tom", clientMessageId: "m\(i)", body: "b\(i)")).get() }
        let shard = world.shards[world.shard(of: "tom")]
        let all = try shard.items(of: "tom", after: 0, limit: 100).get()
        #expect(all.map(\.seq) == Array(1...8))
        // Two devices, one at seq 3, one from scratch in pages of 3: each ends with the same items.
        let late = try shard.items(of: "tom", after: 3, limit: 100).get()
        #expect(late.map(\.seq) == Array(4...8))
        var paged: [ImLogItem] = []
        var after: UInt64 = 0
        while true {
            let page = try shard.items(of: "tom", after: after, limit: 3).get()
            guard let last = page.last else { break }
            paged += page
            after = last.seq
        }
        #expect(paged == all)
        #expect(shard.items(of: "tom", after: 0, limit: 0).failureCode == .badParameter)
    }

    @Test("Sync: items over the log's count or retention are gone; asking for them says historyGone (14207)")
    func oldItemsAreGone() throws {
        var limits = ImLimits()
        limits.maxLogItems = 3
        var world = ImWorld(limits: limits)
        for i in 1...5 { try world.send("amy", P2PSend(to: "tom", clientMessageId: "m\(i)", body: "b\(i)")).get() }
        let shard = world.shards[world.shard(of: "tom")]
        #expect(shard.items(of: "tom", after: 0, limit: 10).failureCode == .historyGone)
        #expect(try shard.items(of: "tom", after: 2, limit: 10).get().map(\.seq) == [3, 4, 5])
        // A resend of a message no longer in the log is a new message (the log no longer knows it).
        #expect(try world.send("amy", P2PSend(to: "tom", clientMessageId: "m1", body: "b1")).get().seq == 6)
        world.time += limits.logRetentionMillis + 1
        try world.send("amy", P2PSend(to: "tom", clientMessageId: "late", body: "x")).get()
        #expect(world.user("tom").log.entries.map(\.seq) == [7], "older than the retention: dropped")
    }

    @Test("Bad input: empty or oversize body, ids, type and ext answer 414 and change nothing")
    func badInput() {
        var world = ImWorld()
        let before = world.shards.map { $0.snapshot() }
        let bad: [(String, P2PSend)] = [
            ("amy", P2PSend(to: "tom", clientMessageId: "c", body: "")),
            ("amy", P2PSend(to: "tom", clientMessageId: "c", body: String(repeating: "b", count: 5001))),
            ("amy", P2PSend(to: "", clientMessageId: "c", body: "x")),
            ("", P2PSend(to: "tom", clientMessageId: "c", body: "x")),
            ("amy", P2PSend(to: "tom", clientMessageId: String(repeating: "c", count: 129), body: "x")),
            ("amy", P2PSend(to: "tom", clientMessageId: "c", type: "", body: "x")),
            ("amy", P2PSend(to: "tom", clientMessageId: "c", body: "x", ext: String(repeating: "e", count: 1025))),
        ]
        for (actor, m) in bad { #expect(world.send(actor, m).failureCode == .badParameter, "\(m)") }
        #expect(world.shards.map { $0.snapshot() } == before)
    }

    @Test("Snapshot: logs, copies in flight and resend memory survive a restore")
    func snapshotKeepsLogs() throws {
        var world = ImWorld()
        try world.send("amy", P2PSend(to: "tom", clientMessageId: "c1", body: "hello"), relay: false).get()
        let restored = try world.shards.map { try ImShardState(restoring: $0.snapshot()) }
        #expect(restored == world.shards)
        world.shards = restored
        #expect(try world.send("amy", P2PSend(to: "tom", clientMessageId: "c1", body: "hello")).get().seq == 1, "still a resend")
        #expect(world.user("amy").log.entries.count == 1, "the copy in the outbox was delivered after the restore")
    }
}

extension Result {
    var failureCode: ImErrorCode? { if case .failure(let e as ImError) = self { e.code } else { nil } }
}
