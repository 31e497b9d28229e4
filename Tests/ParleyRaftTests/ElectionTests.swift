import Testing
@testable import ParleyRaft

@Suite struct ElectionTests {
    @Test("DESIGN-I1: three nodes elect exactly one leader, which commits an empty entry of its term")
    func electsOneLeader() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        let leader = try #require(net.electLeader())
        let term = net.term(leader)
        for id in net.ids {
            #expect(net.term(id) == term)
            #expect(id == leader ? net.role(id) == .leader : net.role(id) == .follower)
            #expect(net.node(id).status.softState.leader == leader)
        }
        // The new leader's empty entry is committed everywhere.
        let last = net.node(leader).status.lastIndex
        #expect(net.storages[leader]!.persistedHardState.commit == last)
        #expect(try net.storages[leader]!.term(at: last) == term)
        for id in net.ids { #expect(net.commit(id) == last) }
    }

    @Test("DESIGN-I2: election timeouts are drawn from [electionTick, 2*electionTick) by the seeded generator")
    func randomizedTimeouts() throws {
        var seen = Set<Int>()
        for seed in UInt64(1)...60 {
            var config = RaftConfig(id: 1, electionTick: 10)
            config.randomSeed = seed
            let node = try RawNode(config: config, storage: MemoryStorage(bootstrap: ConfState(voters: [1, 2, 3])))
            let timeout = node.raft.randomizedElectionTimeout
            #expect(timeout >= 10 && timeout < 20)
            seen.insert(timeout)
            // The same seed gives the same timeout.
            let again = try RawNode(config: config, storage: MemoryStorage(bootstrap: ConfState(voters: [1, 2, 3])))
            #expect(again.raft.randomizedElectionTimeout == timeout)
        }
        #expect(seen.count > 5)
    }

    @Test("DESIGN-I1: a voter refuses a candidate whose log is behind its own")
    func voteNeedsUpToDateLog() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        #expect(net.role(1) == .leader)
        // Node 3 misses entries that 1 and 2 hold.
        net.isolate(3)
        for i in 0..<3 { try net.node(1).propose(payload(i)) }
        net.deliverAll()
        net.heal()
        // A direct request from 3 (lease bypassed as in a transfer) is refused by 2.
        let stale = net.node(3).status
        let mark = net.sent.count
        try net.node(2).step(Message(kind: .vote, from: 3, to: 2, term: net.term(2) + 1, logTerm: net.term(3),
                                     index: stale.lastIndex, campaignTransfer: true))
        net.handleReady(2)
        let answer = try #require(net.sent[mark...].first { $0.kind == .voteResponse })
        #expect(answer.reject)
        net.isolate(1)
        net.tickAll(30)
        let leader = try #require(net.leader())
        #expect(leader == 2, "only node 2 holds the whole log")
        #expect(net.node(2).status.lastIndex >= net.node(1).status.lastIndex)
    }

    @Test("DESIGN-I1: an isolated leader steps down by check-quorum; the rest elect a new one")
    func checkQuorumStepsDown() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        net.isolate(1)
        net.tickAll(25)
        #expect(net.role(1) == .follower)
        let leader = try #require(net.leader())
        #expect(leader != 1)
        net.heal()
        net.tickAll(5)
        #expect(net.node(1).status.softState.leader == leader)
        #expect(net.term(1) == net.term(leader))
    }

    @Test("DESIGN-I1: pre-vote + check-quorum: a rejoining partitioned node does not inflate terms or depose the leader")
    func preVoteNoTermInflation() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        let term = net.term(1)
        net.isolate(3)
        net.tickAll(200)
        // Pre-votes fail, so node 3 never raised its term while cut off.
        #expect(net.term(3) == term)
        #expect(net.role(3) == .preCandidate || net.role(3) == .follower)
        net.heal()
        net.tickAll(10)
        #expect(net.leader() == 1)
        for id in net.ids { #expect(net.term(id) == term) }
        #expect(net.node(3).status.softState.leader == 1)
    }

    @Test("issue 16: a replica without a leader campaigns as soon as a peer is reachable again, not at its next timeout")
    func aLeaderlessReplicaCampaignsWhenAPeerIsReachable() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        let term = net.term(1)
        for id in net.ids { net.isolate(id) }
        net.tickAll(100)  // the leader steps down (check-quorum); every pre-vote fails
        #expect(net.leader() == nil)
        #expect(net.ids.allSatisfy { net.node($0).status.softState.leader == 0 })
        net.heal()
        net.deliverAll()  // nothing moves before the next election timeout…
        #expect(net.leader() == nil)
        net.node(2).reportReachable(3)  // …unless the transport says a peer is back
        net.deliverAll()
        #expect(net.leader() == 2)
        #expect(net.term(2) == term + 1)
        // A replica that knows its leader does nothing (no pre-vote, no new term).
        net.node(3).reportReachable(1)
        net.deliverAll()
        #expect(net.leader() == 2)
        for id in net.ids { #expect(net.term(id) == term + 1) }
    }

    @Test("DESIGN-I1: without pre-vote a rejoining node bumps the term and forces a new election (contrast)")
    func withoutPreVoteTermInflates() throws {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.preVote = false; $0.checkQuorum = false }
        net.campaign(1)
        let term = net.term(1)
        net.isolate(3)
        net.tickAll(100)
        #expect(net.term(3) > term)
        net.heal()
        net.tickAll(30)
        #expect(net.term(1) > term)
    }

    @Test("DESIGN-I1: a learner cannot campaign and never times out into an election")
    func learnerDoesNotCampaign() throws {
        let net = try TestNetwork(voters: [1, 2], learners: [3])
        #expect(throws: RaftError.notVoter) { try net.node(3).campaign() }
        net.isolate(1)
        net.isolate(2)
        net.tickAll(100)
        #expect(net.role(3) == .follower)
        #expect(net.term(3) == 1)
    }

    @Test("DESIGN-I1: a restarted node keeps its term, vote and log")
    func restartKeepsHardState() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        try net.node(1).propose(payload(1))
        net.deliverAll()
        let before = net.node(2).status
        try net.restart(2)
        let after = net.node(2).status
        #expect(after.hardState == before.hardState)
        #expect(after.lastIndex == before.lastIndex)
        net.tickAll(3)
        #expect(net.applied[2] == [payload(1)])
        // With the applied index passed in, nothing already applied is handed out again.
        try net.restart(2, keepApplied: true)
        #expect(net.node(2).status.applied == net.appliedIndex[2])
        net.tickAll(3)
        #expect(net.applied[2] == [payload(1)])
    }
}
