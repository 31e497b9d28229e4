import Testing
@testable import ParleyRaft

@Suite struct ConfChangeTests {
    @Test("DESIGN-I2: a conf change survives encoding; malformed bytes are refused")
    func roundTrip() throws {
        let cc = ConfChange(transition: .jointExplicit, changes: [
            ConfChangeSingle(type: .addVoter, node: 4), ConfChangeSingle(type: .removeNode, node: 0xFFFF_0000_0001),
            ConfChangeSingle(type: .addLearner, node: 7),
        ])
        #expect(try ConfChange(decoding: cc.encoded()) == cc)
        #expect(try ConfChange(decoding: ConfChange.leaveJoint.encoded()).isLeaveJoint)
        var bad = cc.encoded()
        bad.removeLast()
        #expect(throws: ConfChangeDecodingError.self) { try ConfChange(decoding: bad) }
        #expect(throws: ConfChangeDecodingError.self) { try ConfChange(decoding: [9, 0, 0, 0, 0]) }
    }
}
