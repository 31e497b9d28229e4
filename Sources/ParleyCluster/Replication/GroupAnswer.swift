import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyShardState
import ParleyPlacement
import ParleyTransport

/// A group leader's answer to a forwarded proposal.
public enum GroupAnswer<Outcome: BinaryCodable & Sendable & Hashable>: Sendable, Hashable, BinaryCodable {
    case applied(Outcome)
    /// This node is not the leader; the one it knows of (0 = none).
    case notLeader(NodeID)
    /// Leadership moved while the command was in flight: it may or may not have applied, so it is not retried
    /// (a client's resend with the same clientMessageId is de-duplicated by the room).
    case outcomeUnknown
    /// Refused before it could apply (Raft refused the proposal, no replica answered …): safe to try again.
    case unavailable(String)

    /// What a peer's call answered; nil when the peer refused the call (a status other than 200: it did not
    /// run it). A call it ran whose answer does not read here (a version this node does not know, or damage)
    /// is `outcomeUnknown`: the command may have applied, so it is not sent again.
    init?(response: PeerResponse) {
        guard response.status == 200 else { return nil }
        self = (try? GroupAnswer(decoding: response.body)) ?? .outcomeUnknown
    }

    /// Peer protocol 5 and older carry `outcomeUnknown` as a refusal with this text; it still goes so, and
    /// reads back as `outcomeUnknown`, so nodes of both versions agree during a rolling upgrade.
    static var outcomeUnknownText: String { "outcome unknown" }

    public func encode(to w: inout ByteWriter) {
        switch self {
        case .applied(let o): w.write(UInt8(0)); w.write(o)
        case .notLeader(let n): w.write(UInt8(1)); w.write(n)
        case .outcomeUnknown: w.write(UInt8(2)); w.write(Self.outcomeUnknownText)
        case .unavailable(let why): w.write(UInt8(2)); w.write(why)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0: self = .applied(try r.read())
        case 1: self = .notLeader(try r.readUInt64())
        case 2:
            let why = try r.readString()
            self = why == Self.outcomeUnknownText ? .outcomeUnknown : .unavailable(why)
        case let t: throw .badTag("GroupAnswer", UInt64(t))
        }
    }
}

/// The answer to a `ShardRequest`.
public typealias ShardAnswer = GroupAnswer<ShardOutcome>

extension GroupAnswer where Outcome == ShardOutcome {
    /// The answer's bytes for a caller that speaks peer protocol `version`: from 7 on, an applied room
    /// command's outcome in its compact form (a message's answer carries its ids, not the message again;
    /// issue 34). A room outcome is written as `ApplyOutcome` always was, so a caller of any version reads it.
    public func encoded(forCaller version: Int) -> [UInt8] {
        guard version >= PeerProtocol.Feature.compactAnswers.version, case .applied(.room(let outcome)) = self else {
            return encoded()
        }
        var w = ByteWriter()
        w.write(UInt8(0))
        outcome.encodeCompact(to: &w)
        return w.bytes
    }
}
