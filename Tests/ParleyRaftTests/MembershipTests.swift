import Testing
@testable import ParleyRaft

@Suite struct MembershipTests {
    func change(_ changes: [(ConfChangeType, NodeID)], _ transition: ConfChangeTransition = .auto) -> ConfChange {
        ConfChange(transition: transition, changes: changes.map { ConfChangeSingle(type: $0.0, node: $0.1) })
    }

    /// Proposes on leader 1 with `cut` isolated and expects no commit; heals afterwards.
    func proposeWithout(_ cut: [NodeID], _ net: TestNetwork, _ data: [UInt8]) throws {
        for id in cut { net.isolate(id) }
        let commit = net.commit(1)
        try net.node(1).propose(data)
        net.deliverAll()
        #expect(net.commit(1) == commit)
        net.heal()
    }

    @Test("DESIGN-I1: a learner receives the log but does not count for commit; promoted, it does")
    func learnerPromotion() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        try net.add(4)
        try net.node(1).proposeConfChange(change([(.addLearner, 4)]))
        net.tickAll(3)
        #expect(net.node(1).status.confState.learners == [4])
        #expect(net.node(4).status.confState.learners == [4])
        try net.node(1).propose(payload(1))
        net.tickAll(2)
        #expect(net.applied[4] == [payload(1)])
        #expect(throws: RaftError.notVoter) { try net.node(4).campaign() }

        // With 2 and 3 cut off, the learner's acknowledgement does not commit anything.
        let commit = net.commit(1)
        try proposeWithout([2, 3], net, payload(2))
        #expect(net.node(4).status.lastIndex == commit + 1)
        net.deliverAll()

        try net.node(1).proposeConfChange(change([(.addVoter, 4)]))
        net.tickAll(2)
        #expect(net.node(1).status.confState.voters == [1, 2, 3, 4])
        #expect(net.node(4).status.confState.learners.isEmpty)
        // Four voters: two are no longer a quorum.
        try proposeWithout([3, 4], net, payload(3))
        net.tickAll(2)
        #expect(net.applied[4] == [payload(1), payload(2), payload(3)])
    }

    @Test("DESIGN-I1: joint consensus replaces the leader's own seat; the leader steps down and hands over")
    func jointChangeRemovingLeader() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        try net.add(4)
        try net.node(1).proposeConfChange(change([(.addVoter, 4), (.removeNode, 1)]))
        net.tickAll(10)
        // Every member passed through the joint configuration and left it automatically.
        for id: NodeID in [2, 3, 4] {
            let history = net.confStates[id] ?? []
            #expect(history.contains { $0.votersOutgoing == [1, 2, 3] && $0.voters == [2, 3, 4] && $0.autoLeave })
            #expect(history.last == ConfState(voters: [2, 3, 4]))
        }
        #expect(net.role(1) == .follower)
        let leader = try #require(net.leader())
        #expect([2, 3, 4].contains(leader))
        try net.node(leader).propose(payload(7))
        net.tickAll(2)
        for id: NodeID in [2, 3, 4] { #expect(net.applied[id]!.last == payload(7)) }
        #expect(throws: RaftError.notVoter) { try net.node(1).campaign() }
    }

    @Test("DESIGN-I1: an explicit joint configuration stays until it is left; a second change is refused meanwhile")
    func explicitJoint() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        try net.node(1).proposeConfChange(change([(.addLearner, 3)], .jointExplicit))
        net.tickAll(3)
        #expect(net.node(1).status.confState == ConfState(voters: [1, 2], votersOutgoing: [1, 2, 3], learnersNext: [3]))
        #expect(throws: RaftError.self) { try net.node(1).proposeConfChange(change([(.removeNode, 2)])) }
        try net.node(1).proposeConfChange(.leaveJoint)
        net.tickAll(3)
        for id in net.ids { #expect(net.node(id).status.confState == ConfState(voters: [1, 2], learners: [3])) }
    }

    @Test("DESIGN-I1: a group shrinks to one node, which then commits alone")
    func shrinkToOne() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        try net.node(1).proposeConfChange(change([(.removeNode, 3)]))
        net.tickAll(2)
        try net.node(1).proposeConfChange(change([(.removeNode, 2)]))
        net.tickAll(2)
        #expect(net.node(1).status.confState == ConfState(voters: [1]))
        net.isolate(1)
        try net.node(1).propose(payload(5))
        net.deliverAll()
        #expect(net.applied[1]!.last == payload(5))
        net.tickAll(50)
        #expect(net.role(1) == .leader)
    }

    @Test("DESIGN-I1: a second change is refused until the first is applied; invalid changes are refused")
    func pendingChangeRefused() throws {
        let net = try TestNetwork(voters: [1, 2, 3])
        net.campaign(1)
        try net.node(1).proposeConfChange(change([(.addLearner, 4)]))
        #expect(throws: RaftError.self) { try net.node(1).proposeConfChange(change([(.addLearner, 5)])) }
        net.tickAll(2)
        #expect(throws: RaftError.self) {
            try net.node(1).proposeConfChange(change([(.removeNode, 1), (.removeNode, 2), (.removeNode, 3)]))
        }
    }
}
