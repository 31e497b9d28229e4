import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyShardState
import ParleyPlacement
import ParleyTransport

/// A room command sent to the node that leads its shard (`POST /rpc/v1/propose`), with the key of the
/// server-API request it belongs to (SPEC A7), if any.
public struct ForwardedCommand: Sendable, Hashable, BinaryCodable {
    public var shard: ShardID
    public var actor: CommandActor
    public var command: RoomCommand
    public var requestKey: RequestKey?

    public init(shard: ShardID, actor: CommandActor, command: RoomCommand, requestKey: RequestKey? = nil) {
        self.shard = shard
        self.actor = actor
        self.command = command
        self.requestKey = requestKey
    }

    public func encode(to w: inout ByteWriter) {
        w.write(shard)
        // The actor travels in a context whose index and time the leader fills in.
        w.write(ApplyContext(commandIndex: 0, timestamp: 0, actor: actor))
        w.write(command)
        // After the command, so a call without a key reads as before.
        if let requestKey { w.write(requestKey) }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        shard = try r.readInt()
        actor = try r.read(ApplyContext.self).actor
        command = try r.read()
        requestKey = r.isAtEnd ? nil : try r.read(RequestKey.self)
    }

    /// A command that changes nothing and carries no request key: answered by any current replica (a read
    /// index), never appended. A signed server-API read rides the log for its request key, as a write does.
    var isRead: Bool { requestKey == nil && ShardState.isRead(.room(command)) }

    /// A1: a client session's message counts against its room's budgets (the app server's never does).
    var isBudgeted: Bool {
        guard case .sendMessage = command, case .session = actor else { return false }
        return true
    }
}

/// A meta command sent to the meta leader (`POST /rpc/v1/meta/propose`), with its request key, if any.
public struct ForwardedMetaCommand: Sendable, Hashable, BinaryCodable {
    public var command: MetaCommand
    public var requestKey: RequestKey?

    public init(command: MetaCommand, requestKey: RequestKey? = nil) {
        self.command = command
        self.requestKey = requestKey
    }

    public func encode(to w: inout ByteWriter) {
        w.write(command)
        if let requestKey { w.write(requestKey) }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        command = try r.read()
        requestKey = r.isAtEnd ? nil : try r.read(RequestKey.self)
    }
}

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

/// The answer to a forwarded room command.
public typealias ForwardedAnswer = GroupAnswer<ApplyOutcome>

extension GroupAnswer where Outcome == ApplyOutcome {
    /// The answer's bytes for a caller that speaks peer protocol `version`: from 7 on, an applied command's
    /// outcome in its compact form (a message's answer carries its ids, not the message again; issue 34).
    public func encoded(forCaller version: Int) -> [UInt8] {
        guard version >= PeerProtocol.Feature.compactAnswers.version, case .applied(let outcome) = self else {
            return encoded()
        }
        var w = ByteWriter()
        w.write(UInt8(0))
        outcome.encodeCompact(to: &w)
        return w.bytes
    }
}
