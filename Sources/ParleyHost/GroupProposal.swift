import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyShardState

/// Identifies a proposal so the node that made it can answer its caller once the entry applies. The
/// boot number separates proposals of one node across restarts.
public struct ProposalID: Sendable, Hashable {
    public var node: NodeID
    public var boot: UInt64
    public var sequence: UInt64

    public init(node: NodeID, boot: UInt64, sequence: UInt64) {
        self.node = node
        self.boot = boot
        self.sequence = sequence
    }
}

/// The payload of a normal entry in a group's log: a command, who issued it and when, and for a signed
/// server-API request its key (SPEC A7). The timestamp is fixed by the proposing node; replicas never read
/// their own clocks when applying.
///
/// Two forms are written. Form 4 (issue 34, peer protocol 17) is the proposal's id and time followed by the
/// request as the leader received it (`GroupRequest`: the bytes of a peer's `/rpc/v1/propose` body, put into
/// the entry as they came) — one encoding for the call and the log. Form 3 (the id, the time and actor, the
/// key, the command) is written while a node older than protocol 17 runs (`ProposalBatch.append(_:)`), which
/// cannot read form 4; forms 1 and 3 are still read.
public struct GroupProposal<Command: BinaryCodable & Sendable>: Sendable, BinaryCodable {
    /// The form `encode(to:)` writes: 3 adds the request key to 1. (Not 2: that is `ProposalBatch`'s version, and
    /// a lone proposal must never read as a batch.)
    public static var version: UInt8 { 3 }
    /// The form that carries the request's own bytes (`ProposalBatch.append(id:timestamp:request:)`).
    public static var requestForm: UInt8 { 4 }

    public var id: ProposalID
    /// Milliseconds since the epoch at the proposer.
    public var timestamp: Int64
    public var actor: CommandActor
    public var command: Command
    public var requestKey: RequestKey?

    public init(id: ProposalID, timestamp: Int64, actor: CommandActor, command: Command, requestKey: RequestKey? = nil) {
        self.id = id
        self.timestamp = timestamp
        self.actor = actor
        self.command = command
        self.requestKey = requestKey
    }

    public func encode(to w: inout ByteWriter) {
        w.write(Self.version)
        w.write(id.node)
        w.write(id.boot)
        w.write(id.sequence)
        // The command's index is only known at apply; 0 stands in for it on the wire.
        w.write(ApplyContext(commandIndex: 0, timestamp: timestamp, actor: actor))
        w.write(requestKey != nil)
        if let requestKey { w.write(requestKey) }
        w.write(command)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        let version = try r.readByte()
        guard version == 1 || version == Self.version || version == Self.requestForm else { throw .badVersion(version) }
        id = ProposalID(node: try r.readUInt64(), boot: try r.readUInt64(), sequence: try r.readUInt64())
        if version == Self.requestForm {
            timestamp = try r.readInt64()
            let request = try r.readSpanning(GroupRequest<Command>.self)
            (actor, command, requestKey) = (request.actor, request.command, request.requestKey)
            return
        }
        let context = try r.read(ApplyContext.self)
        timestamp = context.timestamp
        actor = context.actor
        let keyed = version >= 3 ? try r.readBool() : false
        requestKey = keyed ? try r.read(RequestKey.self) : nil
        command = try r.read(Command.self)
    }
}

/// A shard entry's payload.
public typealias ShardProposal = GroupProposal<RoomCommand>

/// The payload of a normal entry: the proposals one replica gathered during one ready cycle, in the order
/// they were made and are applied. A busy group then appends, sends, stores and acknowledges one entry per
/// cycle rather than one per command. Laid out as a version byte followed by the proposals back to back.
public struct ProposalBatch<Command: BinaryCodable & Sendable>: Sendable {
    public static var version: UInt8 { 2 }
    /// A batch this full is proposed at once, and the next proposals start another entry: entries stay
    /// well under the peer frame limit and a follower's append stays short.
    public static var maxCount: Int { 512 }
    public static var maxBytes: Int { 256 << 10 }

    private var writer = ByteWriter(capacity: 512)
    /// Where this node's own requests are encoded before they join the batch (no room until the first).
    private var scratch = ByteWriter(capacity: 0)
    /// The proposals' ids, in order.
    public private(set) var ids: [ProposalID] = []

    public init() { writer.write(Self.version) }

    public var isEmpty: Bool { ids.isEmpty }
    public var isFull: Bool { ids.count >= Self.maxCount || writer.bytes.count >= Self.maxBytes }

    /// Appends a proposal in form 3, which every node reads.
    public mutating func append(_ proposal: GroupProposal<Command>) {
        writer.write(proposal)
        ids.append(proposal.id)
    }

    /// Appends a proposal in form 4: its id and time, then `request` — a `GroupRequest`'s bytes, as a peer's call
    /// carried them to this leader or as this node encoded its own — as they are (issue 34: one encoding).
    public mutating func append(id: ProposalID, timestamp: Int64, request: [UInt8]) {
        writer.write(GroupProposal<Command>.requestForm)
        writer.write(id.node)
        writer.write(id.boot)
        writer.write(id.sequence)
        writer.write(timestamp)
        writer.write(bytes: request)
        ids.append(id)
    }

    /// Appends a proposal in form 4 for a request this node made: encoded into a scratch kept for the batch, so
    /// a busy leader's own proposals allocate nothing each (issue 35).
    public mutating func append(id: ProposalID, timestamp: Int64, request: GroupRequest<Command>) {
        scratch.removeAll()
        scratch.write(request)
        append(id: id, timestamp: timestamp, request: scratch.bytes)
    }

    /// The entry's payload.
    public var bytes: [UInt8] { writer.bytes }

    /// Every proposal of an entry's payload; a payload that is not a whole batch throws (and every
    /// replica skips it alike).
    public static func proposals(in data: [UInt8]) throws(CodecError) -> [GroupProposal<Command>] {
        var r = ByteReader(data)
        let v = try r.readByte()
        guard v == version else { throw .badVersion(v) }
        var out: [GroupProposal<Command>] = []
        while !r.isAtEnd { out.append(try r.read(GroupProposal<Command>.self)) }
        guard !out.isEmpty else { throw .truncated }
        return out
    }
}
