import Testing
import ParleyIM
import ParleyWire

/// Issue 38: read receipts — seed 001's team message receipts (sendTeamMessageReceipts /
/// refreshTeamMessageReceipts: read and unread counts and who read) and NIM's P2P read receipt (the peer's
/// read position), with the unread counts they give; replicated, so snapshots and codecs carry them.
@Suite struct ReadReceiptTests {
    /// amy owns "kite" with bea, ned and tom (on other shards); amy and tom each sent two messages.
    func kiteWithMessages() -> (ImWorld, [UInt64]) {
        var world = ImWorld(shards: 3)
        world.team("amy", "kite", .create(TeamInfo(name: "Kite")))
        world.team("amy", "kite", .update([.beInviteMode: "1"], notifyExt: ""))
        world.team("amy", "kite", .invite(targets: ["bea", "ned", "tom"], postscript: "", notifyExt: ""))
        var seqs: [UInt64] = []
        for (who, body) in [("amy", "one"), ("tom", "two"), ("amy", "three"), ("tom", "four")] {
            guard case .success(let o) = world.team(who, "kite", .send(clientMessageId: body, type: "text", body: body, ext: "")) else {
                Issue.record("send failed"); return (world, [])
            }
            seqs.append(o.messageSeq!)
        }
        return (world, seqs)
    }

    func mark(_ world: inout ImWorld, _ who: String, team: String, through: UInt64) -> [ImEvent] {
        world.time += 10
        let s = world.shard(of: team)
        guard case .success(.user(let events)) = world.shards[s].apply(.markRead(.team(teamId: team, throughSeq: through)),
                                                                       context: ImContext(actor: who, time: world.time)) else { return [] }
        return events
    }

    func receipts(_ world: ImWorld, _ team: String, _ seqs: [UInt64], by who: String = "amy") -> [TeamReceipt] {
        var shard = world.shards[world.shard(of: team)]
        guard case .success(.read(.teamReceipts(let list))) = shard.apply(
            .read(.teamReceipts(teamId: team, seqs: seqs)), context: ImContext(actor: who, time: world.time)) else { return [] }
        return list
    }

    @Test("001 team receipts: a member's mark reads every message up to it, counted once per reader (however many devices, in any order); the sender never counts; the senders and the reader's devices hear it")
    func teamReceiptsCountOncePerReader() {
        var (world, seqs) = kiteWithMessages()
        #expect(receipts(world, "kite", seqs).map(\.unread) == [["bea", "ned", "tom"], ["amy", "bea", "ned"], ["bea", "ned", "tom"], ["amy", "bea", "ned"]])
        // bea reads through "three": both senders of what she read hear it, and her own devices.
        let heard = mark(&world, "bea", team: "kite", through: seqs[2])
        #expect(heard.map(\.account) == ["amy", "bea", "tom"])
        #expect(heard.allSatisfy { $0.kind == .read(.team(teamId: "kite"), reader: "bea", throughSeq: seqs[2]) })
        // Her other device marks less, then the same again: nothing changes, nobody is told.
        #expect(mark(&world, "bea", team: "kite", through: seqs[0]).isEmpty)
        #expect(mark(&world, "bea", team: "kite", through: seqs[2]).isEmpty)
        let r = receipts(world, "kite", seqs)
        #expect(r.map(\.readers) == [["bea"], ["bea"], ["bea"], []])
        #expect(r.map { $0.readers.count + $0.unread.count } == [3, 3, 3, 3], "every member but the sender, once")
        // A mark past the log's end stops at its last item; tom reading tells only amy (his own are not read by him).
        let tomHeard = mark(&world, "tom", team: "kite", through: 9_999)
        #expect(tomHeard.map(\.account) == ["amy", "tom"])
        #expect(world.teamRecord("kite")?.members["tom"]?.readThrough == seqs[3])
        #expect(receipts(world, "kite", [seqs[2], seqs[3]]).map(\.readers) == [["bea", "tom"], []])
    }

    @Test("001 team receipts: members who joined after a message are neither readers nor unread; non-members and strangers are refused; other sequences are left out")
    func teamReceiptsRules() {
        var (world, seqs) = kiteWithMessages()
        world.team("amy", "kite", .invite(targets: ["zed"], postscript: "", notifyExt: ""))
        #expect(!receipts(world, "kite", [seqs[0]]).first!.unread.contains("zed"))
        let s = world.shard(of: "kite")
        let outsider = world.shards[s].apply(.markRead(.team(teamId: "kite", throughSeq: 1)), context: ImContext(actor: "gus", time: world.time))
        #expect(outsider.failureCode == .notMember)
        let read = world.shards[s].apply(.read(.teamReceipts(teamId: "kite", seqs: [1])), context: ImContext(actor: "gus", time: world.time))
        #expect(read.failureCode == .notMember)
        #expect(world.shards[s].apply(.read(.teamReceipts(teamId: "kite", seqs: [1])),
                                      context: ImContext(actor: "$app", time: world.time, byAppServer: true)).failureCode == nil)
        #expect(receipts(world, "kite", [1, 9_999]).isEmpty, "the Invite notification and a sequence past the end are not messages")
        #expect(world.shards[s].apply(.read(.teamReceipts(teamId: "kite", seqs: [])), context: ImContext(actor: "amy", time: 1)).failureCode == .badParameter)
    }

    @Test("P2P receipts: the reader's position gives its unread count; the peer learns how far its messages were read (by their receiverSeq); marks never move back")
    func oneToOneReceipts() {
        var world = ImWorld(shards: 3)
        var receiverSeqs: [UInt64] = []
        for i in 0..<3 {
            guard case .success(let sent) = world.send("amy", P2PSend(to: "tom", clientMessageId: "a\(i)", body: "hi \(i)")) else { return }
            receiverSeqs.append(sent.seq)
        }
        world.send("tom", P2PSend(to: "amy", clientMessageId: "t0", body: "hello"))
        let tomShard = world.shard(of: "tom"), amyShard = world.shard(of: "amy")
        func conversations(_ who: String, _ shard: Int) -> [ConversationView] {
            guard case .success(.read(.conversations(let list, _))) = world.shards[shard].apply(.read(.conversations),
                                                                                             context: ImContext(actor: who, time: world.time)) else { return [] }
            return list
        }
        #expect(conversations("tom", tomShard).map { [$0.peer, "\($0.unread)"] } == [["amy", "3"]])
        #expect(conversations("amy", amyShard).first?.unread == 1)
        // tom reads amy's first two messages.
        world.heard = []
        guard case .success(.user(let events)) = world.shards[tomShard].apply(.markRead(.p2p(peer: "amy", throughSeq: receiverSeqs[1])),
                                                                       context: ImContext(actor: "tom", time: world.time)) else {
            Issue.record("mark failed"); return
        }
        #expect(events == [ImEvent(account: "tom", kind: .read(.p2p(peer: "amy"), reader: "tom", throughSeq: receiverSeqs[1]))])
        world.relay()
        #expect(world.heard == [ImEvent(account: "amy", kind: .read(.p2p(peer: "tom"), reader: "tom", throughSeq: receiverSeqs[1]))])
        let tomView = conversations("tom", tomShard).first!
        #expect(tomView.unread == 1 && tomView.readThrough == receiverSeqs[1])
        let amyView = conversations("amy", amyShard).first!
        #expect(amyView.peerReadThrough == receiverSeqs[1] && amyView.last.seq == world.user("amy").log.nextSeq - 1)
        // An older mark (another device, late) changes nothing and goes nowhere.
        world.heard = []
        #expect(world.shards[tomShard].apply(.markRead(.p2p(peer: "amy", throughSeq: receiverSeqs[0])),
                                             context: ImContext(actor: "tom", time: world.time)) == .success(.user([])))
        world.relay()
        #expect(world.heard.isEmpty && world.user("amy").peerReadThrough["tom"] == receiverSeqs[1])
        #expect(world.shards[tomShard].apply(.markRead(.p2p(peer: "tom", throughSeq: 1)), context: ImContext(actor: "tom", time: 1)).failureCode == .oneself)
    }

    @Test("Item 4: a member's team summary counts the others' messages after its position, sent since it joined; its own never; the newest message; non-members left out")
    func teamSummaries() {
        var (world, seqs) = kiteWithMessages()
        world.team("amy", "kite", .invite(targets: ["zed"], postscript: "", notifyExt: ""))
        var shard = world.shards[world.shard(of: "kite")]
        func summary(_ who: String) -> TeamSummary? {
            guard case .success(.read(.teamSummaries(let list))) = shard.apply(.read(.teamSummaries(teamIds: ["kite", "nope"])),
                                                                              context: ImContext(actor: who, time: world.time)) else { return nil }
            #expect(list.count <= 1, "only the teams it is in")
            return list.first
        }
        #expect(summary("bea")?.unread == 4 && summary("bea")?.last?.seq == seqs[3])
        #expect(summary("amy")?.unread == 2, "tom's two; her own never")
        #expect(summary("zed")?.unread == 0, "everything came before zed joined")
        #expect(summary("gus") == nil)
        _ = shard.apply(.markRead(.team(teamId: "kite", throughSeq: seqs[1])), context: ImContext(actor: "bea", time: world.time))
        #expect(summary("bea")?.unread == 2 && summary("bea")?.readThrough == seqs[1])
        let codec = ImShardCommand.read(.teamSummaries(teamIds: ["kite"]))
        #expect(try! ImShardCommand(decoding: codec.encoded()) == codec)
        var w = ByteWriter()
        let answer: Result<ImApplied, ImError> = .success(.read(.conversations([], teams: [summary("bea")!])))
        ImAnswerCodec.write(answer, into: &w)
        var r = ByteReader(w.bytes)
        #expect(try! ImAnswerCodec.read(&r) == answer)
    }

    @Test("A log's entries after a position, by binary search: none after the last or after UInt64.max, all after 0")
    func entriesAfterAPosition() {
        let (world, seqs) = kiteWithMessages()
        let log = world.teamRecord("kite")!.log
        #expect(log.entries(after: 0).map(\.seq) == log.entries.map(\.seq))
        #expect(log.entries(after: seqs[1]).map(\.seq) == [seqs[2], seqs[3]])
        #expect(log.entries(after: seqs[3]).isEmpty && log.entries(after: .max).isEmpty)
        #expect(try! log.after(.max, limit: 1, limits: ImLimits()).get().isEmpty)
    }

    @Test("Snapshots: a state without read positions writes version 1 byte for byte as before; with them, version 2, and restores to the same state")
    func snapshotsCarryReadPositions() throws {
        var (world, seqs) = kiteWithMessages()
        world.send("amy", P2PSend(to: "tom", clientMessageId: "p", body: "psst"))
        for shard in world.shards where !shard.isEmpty {
            #expect(shard.snapshot()[4] == 1, "no read positions yet: version 1")
            #expect(try ImShardState(restoring: shard.snapshot()) == shard)
        }
        _ = mark(&world, "bea", team: "kite", through: seqs[1])
        let tomShard = world.shard(of: "tom")
        _ = world.shards[tomShard].apply(.markRead(.p2p(peer: "amy", throughSeq: 1)), context: ImContext(actor: "tom", time: world.time))
        world.relay()
        for shard in world.shards where !shard.isEmpty {
            let bytes = shard.snapshot()
            let restored = try ImShardState(restoring: bytes)
            #expect(restored == shard)
            #expect(restored.snapshot() == bytes)
        }
        #expect(world.shards.contains { $0.snapshot()[4] == 2 })
    }

    @Test("Codecs: the mark, the reads, their answers and the read events round-trip")
    func codecsRoundTrip() throws {
        for command in [ImShardCommand.markRead(.p2p(peer: "amy", throughSeq: 7)), .markRead(.team(teamId: "kite", throughSeq: 9)),
                        .read(.teamReceipts(teamId: "kite", seqs: [3, 4])), .read(.conversations)] {
            #expect(try ImShardCommand(decoding: command.encoded()) == command)
        }
        var (world, seqs) = kiteWithMessages()
        let events = mark(&world, "bea", team: "kite", through: seqs[3])
        let answers: [Result<ImApplied, ImError>] = [.success(.user(events)), .success(.read(.teamReceipts(receipts(world, "kite", seqs))))]
        for answer in answers {
            var w = ByteWriter()
            ImAnswerCodec.write(answer, into: &w)
            var r = ByteReader(w.bytes)
            #expect(try ImAnswerCodec.read(&r) == answer)
        }
    }
}

