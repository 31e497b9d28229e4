import Testing
@testable import ParleyCluster
import ParleyRooms
import ParleyWire

/// Issue 34: a forwarded proposal's answer is typed (applied, not the leader, outcome unknown, unavailable),
/// and its bytes are the ones nodes of peer protocol 5 send and read, so a rolling upgrade mixes them safely.
@Suite struct GroupAnswerTests {
    typealias Answer = GroupAnswer<ApplyOutcome>

    @Test("every answer reads back as itself")
    func everyAnswerRoundTrips() throws {
        let outcome = ApplyOutcome(result: .failure(RoomError(.roomNotFound, "no room")), events: [])
        for answer: Answer in [.applied(outcome), .notLeader(3), .notLeader(0), .outcomeUnknown, .unavailable("refused")] {
            #expect(try Answer(decoding: answer.encoded()) == answer)
        }
    }

    @Test("an older node's refusal texts: \"outcome unknown\" is the outcome-unknown answer (never retried), any other is unavailable")
    func olderNodesRefusalsReadAsTheirKinds() throws {
        var unknown = ByteWriter(), refused = ByteWriter()
        unknown.write(UInt8(2)); unknown.write("outcome unknown")
        refused.write(UInt8(2)); refused.write("proposal refused: too many uncommitted entries")
        #expect(try Answer(decoding: unknown.bytes) == .outcomeUnknown)
        #expect(try Answer(decoding: refused.bytes) == .unavailable("proposal refused: too many uncommitted entries"))
        #expect(Answer.outcomeUnknown.encoded() == unknown.bytes)
        #expect(throws: CodecError.self) { try Answer(decoding: [3]) }
    }
}
