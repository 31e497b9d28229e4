import Testing
import ParleyIM
import ParleyWire

/// Issue 38 item 5, SPEC D1: a shard's IM logs keep their items in memory only within a byte bound for the
/// whole shard (`setLogWindow`); the oldest leave first, to the node's store as they leave, and what the
/// shard counts and answers from memory — unread counts, conversations, team summaries and receipts, resends —
/// does not change with the bound.
@Suite struct ImLogWindowTests {
    static let bound = 64 << 10
    static let body = String(repeating: "b", count: 900)

    /// The same commands applied to a shard with the bound and to one without (its relay to itself done by hand,
    /// as the cluster's relay would).
    struct Twin {
        var bounded = ImShardState()
        var free = ImShardState()
        var time: Int64 = 1_000

        init() {
            bounded.collectsStoredItems = true
            let set = bounded.apply(.setLogWindow(bytes: ImLogWindowTests.bound), context: ImContext(actor: "", time: 1, byAppServer: true))
            #expect((try? set.get()) != nil)
        }

        @discardableResult
        mutating func run(_ actor: String, _ command: ImShardCommand) -> Result<ImApplied, ImError> {
            time += 10
            let context = ImContext(actor: actor, time: time)
            let a = bounded.apply(command, context: context), b = free.apply(command, context: context)
            let same = a == b
            #expect(same, "the bound changes no answer")
            for i in 0..<2 {
                let outbox = i == 0 ? bounded.outbox : free.outbox
                guard !outbox.isEmpty else { continue }
                let relay = ImContext(actor: "", time: time, byAppServer: true)
                if i == 0 {
                    _ = bounded.apply(.screenedEffects(from: 0, outbox), context: relay)
                    bounded.confirm(outbox.map(\.seq))
                } else {
                    _ = free.apply(.screenedEffects(from: 0, outbox), context: relay)
                    free.confirm(outbox.map(\.seq))
                }
            }
            return a
        }

        func read(_ actor: String, _ r: ImRead) -> (Result<ImReadResult, ImError>, Result<ImReadResult, ImError>) {
            let context = ImContext(actor: actor, time: time)
            return (bounded.read(r, context: context), free.read(r, context: context))
        }
    }

    static let people = ["ann", "ben", "cat", "dan", "eve"]

    /// 400 messages among five users and 100 in a team: ~450 KB of items against a 64 KiB bound.
    static func busy() -> Twin {
        var twin = Twin()
        var info = TeamInfo(name: "Crew")
        info.beInviteMode = .noAuth
        twin.run("ann", .team(teamId: "crew", .create(info)))
        twin.run("ann", .team(teamId: "crew", .invite(targets: ["ben", "cat"], postscript: "", notifyExt: "")))
        for i in 0..<400 {
            let from = people[i % 5], to = people[(i * 3 + 1) % 5]
            guard from != to else { continue }
            twin.run(from, .send(P2PSend(to: to, clientMessageId: "c\(i)", body: "\(i) \(body)")))
            if i % 4 == 0 {
                let member = ["ann", "ben", "cat"][i % 3]
                twin.run(member, .team(teamId: "crew", .send(clientMessageId: "t\(i)", type: "text", body: "\(i) \(body)", ext: "")))
            }
            if i % 37 == 0 { twin.run(to, .markRead(.p2p(peer: from, throughSeq: UInt64(i / 5)))) }
            if i % 53 == 0 { twin.run("ben", .markRead(.team(teamId: "crew", throughSeq: UInt64(i / 8)))) }
        }
        return twin
    }

    @Test("D1 / 38.5: a bounded shard holds at most its bound of IM items; the oldest leave first, to the store; every item is still marked")
    func boundHolds() throws {
        var twin = Self.busy()
        let s = twin.bounded
        // Past the bound, items leave until a quarter of it is free.
        #expect(s.logWindowBytesHeld <= Self.bound && s.logWindowBytesHeld > Self.bound * 3 / 4 - 2_048, "\(s.logWindowBytesHeld)")
        #expect(twin.free.logWindowBytesHeld > 6 * Self.bound)
        // Items left memory oldest first, across every log of the shard.
        var inMemory: [Int64] = [], out: [Int64] = []
        for log in s.users.values.map({ ($0.log.marks, $0.log.windowFirstSeq) }) + s.teams.values.map({ ($0.log.marks, $0.log.windowFirstSeq) }) {
            for m in log.0 { if m.seq < log.1 { out.append(m.time) } else { inMemory.append(m.time) } }
        }
        #expect(!out.isEmpty && out.max()! <= inMemory.min()!)
        // Every log still marks every item, as the unbounded shard does.
        for account in Self.people {
            let marks = s.user(account).log.marks == twin.free.user(account).log.marks
            #expect(marks)
            #expect(s.user(account).log.nextSeq == twin.free.user(account).log.nextSeq)
        }
        // Every item that left memory went to the store, each log's in seq order, decodable; none still in memory.
        let stored = twin.bounded.takeStoredItems()
        var left: [LogOwner: [UInt64]] = [:]
        for (a, u) in s.users { left[.user(a)] = u.log.marks.map(\.seq).filter { $0 < u.log.windowFirstSeq } }
        for (t, r) in s.teams { left[.team(t)] = r.log.marks.map(\.seq).filter { $0 < r.log.windowFirstSeq } }
        var storedByOwner: [LogOwner: [UInt64]] = [:]
        for item in stored { storedByOwner[item.owner, default: []].append(item.seq) }
        #expect(storedByOwner == left.filter { !$0.value.isEmpty })
        for item in stored.prefix(50) {
            switch item.owner {
            case .user(let a): #expect(try ImShardState.decodeUserItem(item.bytes) == twin.free.user(a).log.entry(seq: item.seq))
            case .team(let t): #expect(try ImShardState.decodeTeamItem(item.bytes) == twin.free.team(t)?.log.entry(seq: item.seq))
            }
        }
        // A sync past a log's window says the store has it; within the window it is answered from memory.
        let ann = s.user("ann").log
        #expect(ann.isInStore(after: 0))
        #expect(ann.after(0, limit: 10, limits: ImLimits()).failureCode == .historyGone)
        let fromWindow = try ann.after(ann.windowFirstSeq - 1, limit: 500, limits: ImLimits()).get() == Array(twin.free.user("ann").log.entries.suffix(ann.entries.count))
        #expect(fromWindow)
    }

    @Test("001 / 38.5: unread counts, conversations, team summaries and receipts, and resends are the same with the bound as without")
    func countsDoNotDependOnMemory() throws {
        var twin = Self.busy()
        var unread = 0
        for account in Self.people {
            let (a, b) = twin.read(account, .conversations)
            let same = try a.get() == b.get()
            #expect(same)
            guard case .conversations(let views, _) = try a.get() else { throw ImError(.badParameter, "shape") }
            // ann→ben, ben→eve, dan→ann, eve→dan (cat talks to nobody).
            #expect(views.count == (account == "cat" ? 0 : 2), "\(account): \(views.count) conversations")
            unread += views.reduce(0) { $0 + $1.unread }
        }
        #expect(unread > 100, "most messages are unread")
        for member in ["ann", "ben", "cat"] {
            let (a, b) = twin.read(member, .teamSummaries(teamIds: ["crew"]))
            let same = try a.get() == b.get()
            #expect(same)
        }
        let (ra, rb) = twin.read("ann", .teamReceipts(teamId: "crew", seqs: [3, 4, 5, 40, 90]))
        let sameReceipts = try ra.get() == rb.get()
        #expect(sameReceipts)
        guard case .teamReceipts(let receipts) = try ra.get() else { throw ImError(.badParameter, "shape") }
        #expect(!receipts.isEmpty)
        // The first message to ben left memory long ago; its resend is still recognized: the first send's seq, nothing stored.
        let first = try #require(twin.bounded.user("ben").log.marks.first { $0.isMessage })
        #expect(first.seq < twin.bounded.user("ben").log.windowFirstSeq)
        let resend = twin.run("ann", .send(P2PSend(to: "ben", clientMessageId: "c0", body: "0 \(Self.body)")))
        guard case .sent(let sent) = try resend.get() else { throw ImError(.badParameter, "shape") }
        #expect(sent.seq == first.seq && sent.events.isEmpty)
        // A read mark over items out of memory tells the senders as before.
        let before = twin.bounded.user("ben").log.nextSeq
        let marked = twin.run("ben", .markRead(.p2p(peer: "ann", throughSeq: before - 1)))
        #expect(marked.isSuccess)
    }

    @Test("38.5: snapshot version 4 keeps the bound, marks and each conversation's newest message; a restored replica drops what the first drops")
    func snapshotRoundTrip() throws {
        var twin = Self.busy()
        let bytes = twin.bounded.snapshot()
        #expect(bytes[4] == 4, "version 4 while bounded")
        var restored = try ImShardState(restoring: bytes)
        let equal = restored == twin.bounded  // (a failing #expect on these would print megabytes)
        #expect(equal)
        #expect(restored.logWindowBytes == Self.bound && restored.logWindowBytesHeld == twin.bounded.logWindowBytesHeld)
        let same = restored.snapshot() == bytes
        #expect(same)
        // Both go on alike: the same items leave memory at the same points.
        for i in 0..<60 {
            twin.time += 10
            let context = ImContext(actor: "eve", time: twin.time)
            let m = ImShardCommand.send(P2PSend(to: "dan", clientMessageId: "late\(i)", body: "late \(i) \(Self.body)"))
            let answers = twin.bounded.apply(m, context: context) == restored.apply(m, context: context)
            #expect(answers)
        }
        let alike = restored.snapshot() == twin.bounded.snapshot()
        #expect(alike)
        // Without a bound and with every item in memory, the snapshot keeps its earlier version.
        #expect(twin.free.snapshot()[4] < 4)
    }

    @Test("38.5: a snapshot whose last log holds only small marks, none of its items in memory, restores")
    func snapshotOfMarksOnly() throws {
        var s = ImShardState()
        _ = s.apply(.setLogWindow(bytes: Self.bound), context: ImContext(actor: "", time: 1, byAppServer: true))
        for i in 0..<300 { _ = s.apply(.send(P2PSend(to: "zed", clientMessageId: "", body: "x")), context: ImContext(actor: "yan", time: 10 + Int64(i))) }
        for i in 0..<120 {
            _ = s.apply(.send(P2PSend(to: "amy", clientMessageId: "", body: "\(i) \(Self.body)")), context: ImContext(actor: "bo", time: 1_000 + Int64(i)))
        }
        s.confirm(s.outbox.map(\.seq))  // zed's marks end the snapshot, near nothing else
        #expect(s.user("zed").log.entries.isEmpty && s.user("zed").log.marks.count == 300)
        let restored = try ImShardState(restoring: s.snapshot())
        let same = restored == s
        #expect(same)
    }

    @Test("38.5: an item goes to the store when it leaves memory, never while it is there: an unbounded shard and a log that fits write nothing")
    func storesWhatLeavesMemory() throws {
        var s = ImShardState()
        s.collectsStoredItems = true
        var seq = 0
        func send(_ n: Int) {
            for _ in 0..<n {
                _ = s.apply(.send(P2PSend(to: "ben", clientMessageId: "c\(seq)", body: "\(seq) \(Self.body)")),
                            context: ImContext(actor: "ann", time: 10 + Int64(seq)))
                seq += 1
            }
        }
        send(5)
        #expect(s.takeStoredItems().isEmpty)
        _ = s.apply(.setLogWindow(bytes: Self.bound), context: ImContext(actor: "", time: 9, byAppServer: true))
        #expect(s.takeStoredItems().isEmpty, "5 items fit the bound: nothing leaves, nothing is written")
        // Fill past the bound: the oldest leave, together, until a quarter is free; they and only they are written.
        var stored: [ImStoredItem] = []
        while stored.isEmpty {
            send(1)
            stored = s.takeStoredItems()
        }
        let ben = s.user("ben").log
        #expect(stored.map(\.seq) == Array(1..<ben.windowFirstSeq), "\(stored.map(\.seq)) window from \(ben.windowFirstSeq)")
        #expect(stored.count > 1 && s.logWindowBytesHeld <= Self.bound * 3 / 4)
        #expect(try ImShardState.decodeUserItem(stored[0].bytes).seq == 1)
        // The next items stay in memory, unwritten, until the bound is passed again.
        send(3)
        #expect(s.takeStoredItems().isEmpty)
    }

    @Test("38.5: setLogWindow is the cluster's: out of range is 414 and changes nothing; it round-trips as IM command tag 9")
    func setLogWindowRules() throws {
        var s = ImShardState()
        let before = s.snapshot()
        #expect(s.apply(.setLogWindow(bytes: 1_000), context: ImContext(actor: "", time: 1, byAppServer: true)).failureCode == .badParameter)
        #expect(s.apply(.setLogWindow(bytes: 1 << 20), context: ImContext(actor: "ann", time: 1)).failureCode == .noPermission)
        #expect(s.snapshot() == before)
        let command = ImShardCommand.setLogWindow(bytes: 1 << 20)
        let encoded = command.encoded()
        #expect(encoded[1] == 9)
        #expect(try ImShardCommand(decoding: encoded) == command)
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
