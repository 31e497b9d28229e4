import ParleyRaft
import ParleyRooms
import ParleyWire

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

/// The payload of a normal entry in a group's log: a command, who issued it and when. The timestamp is
/// fixed by the proposing node; replicas never read their own clocks when applying.
public struct GroupProposal<Command: BinaryCodable & Sendable>: Sendable, BinaryCodable {
    public static var version: UInt8 { 1 }

    public var id: ProposalID
    /// Milliseconds since the epoch at the proposer.
    public var timestamp: Int64
    public var actor: CommandActor
    public var command: Command

    public init(id: ProposalID, timestamp: Int64, actor: CommandActor, command: Command) {
        self.id = id
        self.timestamp = timestamp
        self.actor = actor
        self.command = command
    }

    public func encode(to w: inout ByteWriter) {
        w.write(Self.version)
        w.write(id.node)
        w.write(id.boot)
        w.write(id.sequence)
        // The context's log index is only known at apply; 0 stands in for it on the wire.
        w.write(ApplyContext(logIndex: 0, timestamp: timestamp, actor: actor))
        w.write(command)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        let version = try r.readByte()
        guard version == Self.version else { throw .badVersion(version) }
        id = ProposalID(node: try r.readUInt64(), boot: try r.readUInt64(), sequence: try r.readUInt64())
        let context = try r.read(ApplyContext.self)
        timestamp = context.timestamp
        actor = context.actor
        command = try r.read(Command.self)
    }
}

/// A shard entry's payload.
public typealias ShardProposal = GroupProposal<RoomCommand>
