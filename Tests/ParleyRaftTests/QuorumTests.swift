import Testing
@testable import ParleyRaft

@Suite struct QuorumTests {
    @Test("DESIGN-I1: a majority's commit index is the highest index held by a majority")
    func majorityCommitIndex() {
        let matches: [NodeID: LogIndex] = [1: 10, 2: 7, 3: 3, 4: 9, 5: 1]
        #expect(MajorityConfig([1, 2, 3]).committedIndex { matches[$0] } == 7)
        #expect(MajorityConfig([1, 2, 3, 4, 5]).committedIndex { matches[$0] } == 7)
        #expect(MajorityConfig([1, 2, 3, 4]).committedIndex { matches[$0] } == 7)
        #expect(MajorityConfig([1, 9]).committedIndex { matches[$0] } == 0)  // 9 unknown counts as 0
        #expect(MajorityConfig([]).committedIndex { matches[$0] } == .max)
    }

    @Test("DESIGN-I1: a joint configuration commits only what both halves commit")
    func jointCommitIndex() {
        let matches: [NodeID: LogIndex] = [1: 10, 2: 8, 3: 2, 4: 3, 5: 1]
        let joint = JointConfig(incoming: MajorityConfig([1, 2, 3]), outgoing: MajorityConfig([3, 4, 5]))
        #expect(joint.committedIndex { matches[$0] } == 2)  // incoming 8, outgoing 2
        let simple = JointConfig(incoming: MajorityConfig([1, 2, 3]))
        #expect(simple.committedIndex { matches[$0] } == 8)
    }

    @Test("DESIGN-I1: votes are won, lost or pending by majority, in both halves when joint")
    func voteResults() {
        let three = MajorityConfig([1, 2, 3])
        #expect(three.voteResult { [1: true, 2: true][$0] } == .won)
        #expect(three.voteResult { [1: true][$0] } == .pending)
        #expect(three.voteResult { [1: true, 2: false, 3: false][$0] } == .lost)
        let joint = JointConfig(incoming: MajorityConfig([1, 2, 3]), outgoing: MajorityConfig([3, 4, 5]))
        #expect(joint.voteResult { [1: true, 2: true, 3: true][$0] } == .pending)
        #expect(joint.voteResult { [1: true, 2: true, 3: true, 4: true][$0] } == .won)
        #expect(joint.voteResult { [1: true, 2: true, 4: false, 5: false][$0] } == .lost)
    }

    @Test("DESIGN-I1: the in-flight ring frees acknowledged messages and bounds count and bytes")
    func inflights() {
        var ring = Inflights(capacity: 3, maxBytes: 0)
        ring.add(index: 5, bytes: 10)
        ring.add(index: 8, bytes: 10)
        ring.add(index: 12, bytes: 10)
        #expect(ring.isFull)
        ring.freeLE(8)
        #expect(ring.count == 1 && ring.bytes == 10 && !ring.isFull)
        ring.add(index: 13, bytes: 1)
        ring.add(index: 14, bytes: 1)
        ring.freeFirstOne()
        #expect(ring.count == 2)
        ring.freeLE(100)
        #expect(ring.count == 0 && ring.bytes == 0)
        var bytes = Inflights(capacity: 100, maxBytes: 50)
        bytes.add(index: 1, bytes: 30)
        #expect(!bytes.isFull)
        bytes.add(index: 2, bytes: 30)
        #expect(bytes.isFull)
    }
}

@Suite struct ConfChangerTests {
    func tracker(_ cs: ConfState) throws -> ProgressTracker {
        let empty = ProgressTracker(maxInflight: 10, maxInflightBytes: 0)
        let (cfg, prs) = try ConfChanger.restore(cs, tracker: empty, lastIndex: 10)
        var t = empty
        t.replace(config: cfg, progress: prs)
        return t
    }

    func apply(_ cs: ConfState, _ cc: ConfChange) throws -> ConfState {
        let (cfg, _) = try ConfChanger(tracker: tracker(cs), lastIndex: 10).apply(cc)
        return cfg.confState
    }

    func single(_ type: ConfChangeType, _ node: NodeID) -> ConfChangeSingle { ConfChangeSingle(type: type, node: node) }

    @Test("DESIGN-I1: a simple change may alter one voter only; more need a joint configuration")
    func simpleChangeRule() throws {
        let cs = ConfState(voters: [1, 2, 3])
        #expect(try apply(cs, ConfChange(changes: [single(.addVoter, 4)])) == ConfState(voters: [1, 2, 3, 4]))
        #expect(throws: ConfChangeError.self) {
            try ConfChanger(tracker: tracker(cs), lastIndex: 10).simple([single(.addVoter, 4), single(.removeNode, 1)])
        }
        // The same two changes through .auto go joint and leave automatically.
        let joint = try apply(cs, ConfChange(changes: [single(.addVoter, 4), single(.removeNode, 1)]))
        #expect(joint == ConfState(voters: [2, 3, 4], votersOutgoing: [1, 2, 3], autoLeave: true))
        #expect(try apply(joint, .leaveJoint) == ConfState(voters: [2, 3, 4]))
    }

    @Test("DESIGN-I1: a voter demoted while outgoing waits in learnersNext; joint rules are enforced")
    func jointRules() throws {
        let cs = ConfState(voters: [1, 2, 3])
        let joint = try apply(cs, ConfChange(transition: .jointExplicit, changes: [single(.addLearner, 3)]))
        #expect(joint == ConfState(voters: [1, 2], votersOutgoing: [1, 2, 3], learnersNext: [3]))
        #expect(try apply(joint, .leaveJoint) == ConfState(voters: [1, 2], learners: [3]))
        #expect(throws: ConfChangeError.self) { try apply(joint, ConfChange(changes: [single(.addVoter, 9)])) }
        #expect(throws: ConfChangeError.self) {
            try apply(joint, ConfChange(transition: .jointExplicit, changes: [single(.addVoter, 9)]))
        }
        #expect(throws: ConfChangeError.self) { try apply(cs, .leaveJoint) }
        #expect(throws: ConfChangeError.self) {
            try apply(cs, ConfChange(transition: .jointImplicit, changes: [single(.removeNode, 1), single(.removeNode, 2), single(.removeNode, 3)]))
        }
    }

    @Test("DESIGN-I1: restoring a joint ConfState rebuilds the same configuration")
    func restoreJoint() throws {
        let cs = ConfState(voters: [2, 3, 4], votersOutgoing: [1, 2, 3], learners: [5], learnersNext: [1], autoLeave: true)
        let t = try tracker(cs)
        #expect(t.confState == cs)
        #expect(t.memberIDs == [1, 2, 3, 4, 5])
        #expect(t.progress[1]?.isLearner == false)
        #expect(t.progress[5]?.isLearner == true)
    }
}
