import Testing
@testable import ParleyRaft

@Suite struct ReadIndexTests {
    @Test("DESIGN-I4: a new leader answers reads only after committing an entry of its term")
    func readAfterLeaderChange() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        try net.node(1).propose(payload(1))
        net.deliverAll()
        // Node 2 takes over, but its followers' answers to its appends are lost for now.
        net.isolate(1)
        net.dropIf = { $0.kind == .appendResponse }
        var newLeader: NodeID?
        for _ in 0..<100 where newLeader == nil {
            net.tickAll()
            newLeader = [2, 3].first { net.role($0) == .leader }
        }
        let leader = try #require(newLeader)
        let newTermEntry = net.node(leader).status.lastIndex
        #expect(net.commit(leader) < newTermEntry)
        net.node(leader).readIndex([7])
        net.tickAll(3)
        #expect(net.readStates[leader, default: []].isEmpty)
        net.dropIf = nil
        net.tickAll(2)
        let state = try #require(net.readStates[leader]?.first)
        #expect(state.requestContext == [7])
        #expect(state.index >= newTermEntry)
    }

    @Test("DESIGN-I4: a follower's read is forwarded, confirmed by a quorum and answered with the leader's commit")
    func followerRead() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        try net.node(1).propose(payload(1))
        net.deliverAll()
        let mark = net.sent.count
        net.node(3).readIndex([1, 2, 3])
        net.deliverAll()
        let state = try #require(net.readStates[3]?.first)
        #expect(state == ReadState(index: net.commit(1), requestContext: [1, 2, 3]))
        #expect(net.sent[mark...].contains { $0.kind == .heartbeat && $0.context == [1, 2, 3] })
    }

    @Test("DESIGN-I4: a leader cut off from its quorum never answers a read")
    func noReadWithoutQuorum() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        net.isolate(1)
        net.node(1).readIndex([5])
        net.tickAll(30)
        #expect(net.readStates[1, default: []].isEmpty)
        #expect(net.role(1) != .leader)
    }

    @Test("DESIGN-I4: lease-based reads skip the heartbeat round only while the lease holds")
    func leaseRead() throws {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.readOnlyOption = .leaseBased }
        // Freshly started nodes assume a lease may exist and refuse votes for an election timeout.
        #expect(throws: Never.self) { try net.node(1).campaign() }
        net.deliverAll()
        #expect(net.leader() == nil)
        let leader = try #require(net.electLeader())
        net.tickAll(2)
        // A quorum acknowledged a recent heartbeat: answered at once, without any message.
        var mark = net.sent.count
        net.node(leader).readIndex([2])
        net.handleReady(leader)
        #expect(net.readStates[leader]?.last == ReadState(index: net.commit(leader), requestContext: [2]))
        #expect(!net.sent[mark...].contains { $0.context == [2] })
        // Cut off, the lease runs out after electionTick - margin ticks; then reads need a quorum round.
        net.isolate(leader)
        for _ in 0..<8 { net.node(leader).tick() }
        net.deliverAll()
        mark = net.sent.count
        net.node(leader).readIndex([3])
        net.deliverAll()
        #expect(!(net.readStates[leader] ?? []).contains { $0.requestContext == [3] })
        #expect(net.sent[mark...].contains { $0.kind == .heartbeat && $0.context == [3] })
    }

    @Test("DESIGN-I4: a leader that ordered a transfer serves no more lease reads")
    func leaseRevokedByTransfer() throws {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.readOnlyOption = .leaseBased }
        let leader = try #require(net.electLeader())
        net.tickAll(2)
        let other = net.ids.first { $0 != leader }!
        net.dropIf = { $0.kind == .timeoutNow }  // the transferee never hears it
        net.node(leader).transferLeadership(to: other)
        net.deliverAll()
        net.node(leader).readIndex([4])
        net.handleReady(leader)
        #expect(net.readStates[leader, default: []].isEmpty)
    }
}
