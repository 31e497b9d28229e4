import Testing
@testable import ParleyRaft

@Suite struct QuiescenceTests {
    static func quietNetwork() throws -> TestNetwork {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.quiesceAfterTicks = 5 }
        net.campaign(1)
        try net.node(1).propose(payload(1))
        net.deliverAll()
        net.tickAll(8)
        return net
    }

    @Test("DESIGN-I1: an idle group stops heartbeating and its followers stop their election timers")
    func idleGroupGoesQuiet() throws {
        let net = try Self.quietNetwork()
        for id in net.ids { #expect(net.node(id).status.isQuiesced) }
        let mark = net.sent.count
        let term = net.term(1)
        for _ in 0..<1000 {
            for id in net.ids { net.node(id).tick() }
            for id in net.ids { #expect(!net.node(id).hasReady) }
        }
        #expect(net.sent.count == mark)
        #expect(net.term(1) == term)
        #expect(net.leader() == 1)
    }

    @Test("DESIGN-I1: a proposal wakes the group; it commits and the group goes quiet again")
    func proposalWakes() throws {
        let net = try Self.quietNetwork()
        try net.node(1).propose(payload(2))
        #expect(!net.node(1).status.isQuiesced)
        net.deliverAll()
        for id in net.ids {
            #expect(!net.node(id).status.isQuiesced)
            #expect(net.applied[id]!.last == payload(2))
        }
        net.tickAll(8)
        for id in net.ids { #expect(net.node(id).status.isQuiesced) }
    }

    @Test("DESIGN-I1: followers of a quiet leader that died stay quiet until woken, then elect a new leader")
    func wakeAfterLeaderLoss() throws {
        let net = try Self.quietNetwork()
        let term = net.term(1)
        net.isolate(1)
        net.tickAll(100)
        // The liveness trade-off: nobody notices until something wakes them.
        #expect(net.term(2) == term && net.term(3) == term)
        net.node(2).reportUnreachable(1)
        net.node(3).wake()
        net.tickAll(40)
        let leader = try #require(net.leader())
        #expect(leader == 2 || leader == 3)
    }

    @Test("DESIGN-I1: a follower that missed the quiesce heartbeat wakes the group without deposing the leader")
    func missedQuiesceHeartbeat() throws {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.quiesceAfterTicks = 5 }
        net.campaign(1)
        let term = net.term(1)
        net.dropIf = { $0.kind == .heartbeat && $0.quiesce && $0.to == 3 }
        net.tickAll(8)
        #expect(net.node(1).status.isQuiesced)
        #expect(!net.node(3).status.isQuiesced)
        net.dropIf = nil
        net.tickAll(60)
        #expect(net.leader() == 1)
        for id in net.ids {
            #expect(net.term(id) == term)
            #expect(net.node(id).status.isQuiesced)
        }
    }
}

extension QuiescenceTests {
    @Test("DESIGN-I1: a follower woken by another node's message wakes its live leader, so no election follows")
    func wokenFollowerWakesLeader() throws {
        let net = try Self.quietNetwork()
        let term = net.term(1)
        // Node 3 is cut off from the leader only, so the leader never hears its pre-votes.
        net.cut.insert([3, 1])
        net.cut.insert([1, 3])
        net.node(3).wake()
        net.tickAll(40)
        #expect(net.leader() == 1)
        #expect(net.term(1) == term && net.term(2) == term)
    }
}
