import Testing
@testable import ParleyRaft

@Suite struct ReplicationTests {
    @Test("DESIGN-I2: every replica applies the same entries in the same order")
    func replicatesInOrder() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        for i in 0..<50 {
            try net.node(1).propose(payload(i))
            if i % 7 == 0 { net.deliverAll() }
        }
        net.deliverAll()
        let expected = (0..<50).map { payload($0) }
        for id in net.ids {
            #expect(net.applied[id] == expected)
            #expect(net.log(id) == net.log(1))
        }
    }

    /// Logs of Figure 7 of the Raft paper (terms of indexes 2…; index 1 is the bootstrap snapshot).
    static let leaderTerms: [Term] = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6]
    static let followerLogs: [[Term]] = [
        [1, 1, 1, 4, 4, 5, 5, 6, 6],          // missing one entry
        [1, 1, 1, 4],                          // missing many
        [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6],    // one extra uncommitted entry
        [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7], // extra entries of a later term
        [1, 1, 1, 4, 4, 4, 4],                 // divergent tail of term 4
        [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3],    // long divergent tail of older terms
    ]

    static func storage(terms: [Term], term: Term) throws -> MemoryStorage {
        let s = MemoryStorage(bootstrap: ConfState(voters: [1, 2, 3]))
        try s.append(terms.enumerated().map { Entry(term: $0.element, index: LogIndex($0.offset + 2), data: [UInt8($0.offset)]) })
        s.setHardState(HardState(term: term, vote: 0, commit: 1))
        return s
    }

    @Test("DESIGN-I1 DESIGN-I2: a new leader repairs divergent follower logs (Figure 7 cases)",
          arguments: 0..<6)
    func repairsDivergentLog(_ variant: Int) throws {
        let net = TestNetworkBuilder.empty()
        try net.add(1, storage: Self.storage(terms: Self.leaderTerms, term: 8))
        try net.add(2, storage: Self.storage(terms: Self.leaderTerms, term: 8))
        try net.add(3, storage: Self.storage(terms: Self.followerLogs[variant], term: 8))
        net.campaign(1)
        #expect(net.role(1) == .leader)
        net.tickAll(3)
        let leaderLog = net.log(1)
        #expect(net.log(3) == leaderLog)
        #expect(net.commit(3) == leaderLog.last!.index)
        // The leader's entries survive, a follower's extra entries are gone.
        #expect(Array(leaderLog.prefix(10).map(\.term)) == Self.leaderTerms)
    }

    @Test("DESIGN-I1: a rejected append skips a whole divergent term per round trip")
    func conflictHintSkipsTerms() throws {
        let net = TestNetworkBuilder.empty()
        try net.add(1, storage: Self.storage(terms: Self.leaderTerms, term: 8))
        try net.add(2, storage: Self.storage(terms: Self.leaderTerms, term: 8))
        try net.add(3, storage: Self.storage(terms: Self.followerLogs[5], term: 8))
        net.campaign(1)
        net.tickAll(3)
        let rejections = net.sent.filter { $0.kind == .appendResponse && $0.from == 3 && $0.reject }
        // One entry at a time would take 8 rejections; by term it takes at most 3.
        #expect(rejections.count >= 1 && rejections.count <= 3)
        #expect(net.log(3) == net.log(1))
    }

    @Test("DESIGN-I1: old-term entries commit only through an entry of the current term (Figure 8)")
    func commitOnlyCurrentTerm() throws {
        let net = TestNetworkBuilder.empty()
        for id: NodeID in 1...3 { try net.add(id, storage: Self.storage(terms: [1, 1], term: 1)) }
        // Followers never see the new leader's entries; their acks are injected below.
        net.dropIf = { $0.kind == .append && $0.from == 1 }
        net.campaign(1)
        #expect(net.role(1) == .leader)
        let term = net.term(1)
        #expect(net.node(1).status.lastIndex == 4)  // 2, 3 of term 1 and the leader's empty entry
        // A quorum (1 and 2) holds index 3 of term 1: not enough to commit it.
        try net.node(1).step(Message(kind: .appendResponse, from: 2, to: 1, term: term, index: 3))
        net.handleAllReady()
        #expect(net.commit(1) == 1)
        // Once the entry of the current term is on a quorum, it and everything before it commit.
        try net.node(1).step(Message(kind: .appendResponse, from: 2, to: 1, term: term, index: 4))
        net.handleAllReady()
        #expect(net.commit(1) == 4)
    }

    @Test("DESIGN-I1: in-flight appends per peer are bounded by count and by bytes")
    func inflightLimits() throws {
        for (messages, bytes, expected) in [(2, 0, 2), (100, 3 * payload(0, size: 100).count + 3 * 24, 3)] {
            let net = try TestNetwork(voters: [1, 2, 3]) {
                $0.maxInflightMessages = messages
                $0.maxInflightBytes = bytes
                $0.maxSizePerMessage = 1  // one entry per message
            }
            net.campaign(1)
            net.cut.insert([2, 1])  // node 2's answers are lost
            let mark = net.sent.count
            for i in 0..<10 {
                try net.node(1).propose(payload(i, size: 100))
                net.deliverAll()
            }
            let toTwo = net.sent[mark...].filter { $0.kind == .append && $0.to == 2 && !$0.entries.isEmpty }
            let toThree = net.sent[mark...].filter { $0.kind == .append && $0.to == 3 && !$0.entries.isEmpty }
            #expect(toTwo.count == expected)
            #expect(toThree.count == 10)
            #expect(net.node(1).status.progress[2]?.inflightMessages == expected)
            net.heal()
            net.tickAll(2)
            #expect(net.applied[2]!.count == 10)
        }
    }

    @Test("DESIGN-I1: proposals over the uncommitted cap are refused with an error, never dropped silently")
    func uncommittedCap() throws {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.maxUncommittedEntriesSize = 1000 }
        net.campaign(1)
        net.isolate(1)
        var accepted = 0
        var refusal: RaftError?
        for i in 0..<20 {
            do {
                try net.node(1).propose(payload(i, size: 100))
                accepted += 1
            } catch let error as RaftError {
                refusal = error
                break
            }
        }
        #expect(accepted == 10)
        #expect(refusal == .proposalsOverUncommittedCap)
        let last = net.node(1).status.lastIndex
        #expect(net.node(1).status.uncommittedBytes == 1000)
        // Once they commit, the cap frees up.
        net.heal()
        net.deliverAll()
        net.tickAll(2)
        #expect(net.applied[2]!.count == 10)
        #expect(net.node(1).status.uncommittedBytes == 0)
        try net.node(1).propose(payload(99, size: 100))
        #expect(net.node(1).status.lastIndex == last + 1)
    }

    @Test("DESIGN-I1: only the leader takes proposals; a follower names the leader")
    func followerRefusesProposals() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        #expect(throws: RaftError.notLeader(leader: 1)) { try net.node(2).propose([1]) }
    }

    @Test("DESIGN-I1: with forwardProposals a follower passes proposals to its leader, which appends them once")
    func followerForwardsProposals() throws {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.forwardProposals = true }
        net.campaign(1)
        let last = net.node(1).status.lastIndex
        try net.node(2).propose(payload(7))
        try net.node(2).propose(batch: [payload(8), payload(9)])
        #expect(net.node(2).status.lastIndex == last)  // nothing enters the follower's own log first
        net.deliverAll()
        let forwarded = net.sent.filter { $0.kind == .propose }
        #expect(forwarded.count == 2 && forwarded.allSatisfy { $0.from == 2 && $0.to == 1 && $0.term == 0 })
        #expect(net.node(1).status.lastIndex == last + 3)
        for id: NodeID in [1, 2, 3] { #expect(net.applied[id]!.suffix(3) == [payload(7), payload(8), payload(9)]) }
        // Without a known leader there is no one to pass it to.
        let alone = try TestNetwork(voters: [1, 2, 3]) { $0.forwardProposals = true }
        #expect(throws: RaftError.notLeader(leader: 0)) { try alone.node(2).propose([1]) }
    }

    @Test("DESIGN-I1: a forwarded proposal reaching a node that does not lead is dropped, never passed on again")
    func forwardedProposalToAFollowerIsDropped() throws {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.forwardProposals = true }
        net.campaign(1)
        let last = net.node(3).status.lastIndex
        let mark = net.sent.count
        try net.node(3).step(Message(kind: .propose, from: 2, to: 3, entries: [Entry(term: 0, index: 0, kind: .normal, data: [1])]))
        net.deliverAll()
        #expect(net.sent[mark...].filter { $0.kind == .propose }.isEmpty)
        #expect(net.node(1).status.lastIndex == last && net.node(3).status.lastIndex == last)
    }

    @Test("DESIGN-I1: a forwarded proposal may carry only unindexed normal entries; anything else is refused unstepped")
    func malformedForwardedProposalsAreRefused() throws {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.forwardProposals = true }
        net.campaign(1)
        let last = net.node(1).status.lastIndex
        let bad: [[Entry]] = [
            [],
            [Entry(term: 0, index: 0, kind: .confChange, data: ConfChange(changes: [ConfChangeSingle(type: .removeNode, node: 3)]).encoded())],
            [Entry(term: 1, index: last + 1, kind: .normal, data: [1])],
        ]
        for entries in bad {
            #expect(throws: (any Error).self) { try net.node(1).step(Message(kind: .propose, from: 2, to: 1, entries: entries)) }
        }
        net.deliverAll()
        #expect(net.node(1).status.lastIndex == last)
    }

    @Test("DESIGN-I1: proposals made before a Ready travel in one append per follower (batching)")
    func batchesProposals() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        let mark = net.sent.count
        for i in 0..<20 { try net.node(1).propose(payload(i)) }
        net.handleReady(1)
        let appends = net.sent[mark...].filter { $0.kind == .append && $0.from == 1 }
        #expect(appends.count == 2)
        #expect(appends.allSatisfy { $0.entries.count == 20 })
    }
}

enum TestNetworkBuilder {
    static func empty() -> TestNetwork { try! TestNetwork(voters: []) }
}

extension ReplicationTests {
    @Test("DESIGN-I5: a malformed message is refused with a clear error and changes nothing")
    func malformedMessagesRefused() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        let before = net.node(2).status
        let term = net.term(1)
        let gap = Message(kind: .append, from: 1, to: 2, term: term, logTerm: term, index: before.lastIndex,
                          entries: [Entry(term: term, index: before.lastIndex + 2)])
        #expect(throws: RaftError.self) { try net.node(2).step(gap) }
        let future = Message(kind: .append, from: 1, to: 2, term: term, logTerm: term, index: before.lastIndex,
                             entries: [Entry(term: term + 5, index: before.lastIndex + 1)])
        #expect(throws: RaftError.self) { try net.node(2).step(future) }
        let chunk = Message(kind: .snapshot, from: 1, to: 2, term: term, snapshot: Snapshot(data: [1, 2, 3]),
                            snapshotOffset: 0, snapshotTotalBytes: 2)
        #expect(throws: RaftError.self) { try net.node(2).step(chunk) }
        #expect(throws: RaftError.wrongRecipient(3)) { try net.node(2).step(Message(kind: .heartbeat, from: 1, to: 3, term: term)) }
        #expect(!net.node(2).hasReady)
        #expect(net.node(2).status.lastIndex == before.lastIndex)
    }
}

extension ReplicationTests {
    @Test("DESIGN-I1: Figure 8 on a network: an old-term entry on a majority is not committed and may be replaced")
    func figure8Scenario() throws {
        let net = try TestNetwork(voters: [1, 2, 3, 4, 5]) {
            $0.preVote = false
            $0.checkQuorum = false
            $0.maxSizePerMessage = 1  // one entry per append
        }
        let x = payload(8)
        // (a) S1 leads term 2 and gets X (index 3) onto S2 only.
        net.campaign(1)
        #expect(net.term(1) == 2)
        net.dropIf = { $0.kind == .append && $0.from == 1 && $0.to > 2 }
        try net.node(1).propose(x)
        net.deliverAll()
        #expect(net.log(2).last?.term == 2 && net.log(2).last?.index == 3)
        // (b) S5 leads term 3 with votes of S3, S4; its entry at index 3 stays with it.
        net.heal()
        net.isolate(1)
        net.isolate(2)
        net.dropIf = { $0.kind == .append && $0.from == 5 }
        net.campaign(5)
        #expect(net.role(5) == .leader && net.term(5) == 3)
        // (c) S5 is down; S1 leads term 4 and spreads X to S3, but its term-4 entry is held back.
        net.heal()
        net.isolate(5)
        net.rewrite = { m in
            var m = m
            m.entries.removeAll { $0.term == 4 }
            return m
        }
        // S1 (still leader of term 2 in its own eyes) hears of term 3, then campaigns in term 4.
        try net.node(1).step(Message(kind: .heartbeatResponse, from: 3, to: 1, term: 3))
        #expect(net.role(1) == .follower)
        net.campaign(1)
        #expect(net.role(1) == .leader && net.term(1) == 4)
        let term = net.term(1)
        net.tickAll(3)
        #expect(try net.storages[3]!.term(at: 3) == 2)
        // X is on S1, S2, S3 — a majority — but of an old term: not committed.
        #expect(net.commit(1) == 2)
        #expect(!net.applied.values.contains { $0.contains(x) })
        // (d) S1 goes down; S5 (last term 3) wins and rightly replaces X everywhere.
        net.heal()
        net.isolate(1)
        try net.node(5).step(Message(kind: .heartbeatResponse, from: 3, to: 5, term: term))
        net.campaign(5)
        #expect(net.role(5) == .leader && net.term(5) > term)
        net.tickAll(3)
        for id: NodeID in 2...5 {
            #expect(try net.storages[id]!.term(at: 3) == 3)
            #expect(!net.applied[id]!.contains(x))
        }
    }
}
