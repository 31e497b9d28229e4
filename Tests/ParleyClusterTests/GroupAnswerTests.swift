import Testing
@testable import ParleyCluster
import ParleyRooms
import ParleyWire
import ParleyShardState

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

    @Test("a message's answer is compact only for a caller of peer protocol 7 or more; an older caller gets the form it reads")
    func compactOnlyForCallersThatReadIt() throws {
        let message = ChatMessage(seq: 4, serverId: 77, time: 1_000, senderId: "u", senderNickname: "", senderAvatar: "",
                                  senderRoomExt: "", type: .text, clientMessageId: "c", body: String(repeating: "b", count: 300),
                                  ext: "")
        let outcome = ApplyOutcome(result: .success(.messageSent(seq: 4, time: 1_000, serverId: 77)),
                                   events: [RoomEvent(roomId: "r", seq: 4, audience: .room, kind: .message(message))])
        // Issue 34: a shard's answer (`ShardAnswer`, any shard command's) writes a room outcome as this did.
        let answer = Answer.applied(outcome)
        let shardAnswer = ShardAnswer.applied(.room(outcome))
        let older = shardAnswer.encoded(forCaller: 6)
        #expect(older == answer.encoded())
        // What a node of version 6 reads: tag 0, RoomReply tag 3 (seq, time), then the events with the message.
        var r = ByteReader(older)
        #expect(try r.readByte() == 0 && r.readByte() == 0 && r.readByte() == 3)
        #expect(try Answer(decoding: older) == answer)

        let compact = shardAnswer.encoded(forCaller: 7)
        #expect(compact.count < older.count - 300)
        #expect(try Answer(decoding: compact) == .applied(ApplyOutcome(result: outcome.result, events: [])))
        // Anything but `applied` is the same bytes for every caller.
        for other: ShardAnswer in [.notLeader(2), .outcomeUnknown, .unavailable("x")] {
            #expect(other.encoded(forCaller: 7) == other.encoded())
        }
    }
}
