import Testing
@testable import ParleyRaft

@Suite struct TransferTests {
    @Test("DESIGN-I1: leadership moves to a lagging node once the leader has caught it up")
    func transferToLaggingNode() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        let term = net.term(1)
        net.cut.insert([1, 3])
        for i in 0..<5 { try net.node(1).propose(payload(i)) }
        net.deliverAll()
        #expect(net.node(3).status.lastIndex < net.node(1).status.lastIndex)
        net.heal()
        net.node(1).transferLeadership(to: 3)
        #expect(net.node(1).status.leadTransferee == 3)
        // No proposals while the transfer is under way.
        #expect(throws: RaftError.transferInProgress) { try net.node(1).propose([9]) }
        net.deliverAll()
        #expect(net.leader() == 3)
        #expect(net.term(3) == term + 1)
        #expect(net.role(1) == .follower)
        net.tickAll(2)
        #expect(net.applied[3] == (0..<5).map { payload($0) })
        try net.node(3).propose(payload(10))
        net.deliverAll()
        #expect(net.applied[1]!.last == payload(10))
    }

    @Test("DESIGN-I1: a transfer to an unreachable node is abandoned after an election timeout")
    func transferAborts() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        net.isolate(3)
        net.node(1).transferLeadership(to: 3)
        #expect(net.node(1).status.leadTransferee == 3)
        net.tickAll(10)
        #expect(net.node(1).status.leadTransferee == 0)
        #expect(net.leader() == 1)
        try net.node(1).propose([1])
    }

    @Test("DESIGN-I1: a follower forwards a transfer request to the leader")
    func forwardedTransfer() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        net.node(2).transferLeadership(to: 2)
        net.deliverAll()
        #expect(net.leader() == 2)
    }
}
