import ParleyIM
import ParleyRooms
import ParleyWire
import ParleyShardState
import ParleyPlacement

/// Issue 19: an IM command sent to the node that leads its shard (`POST /rpc/v1/im/propose`): the shard, who
/// acts (a session, or the app server and the cluster's relay), the user it acts for, the command and the
/// server-API request it belongs to, if any.
public struct ForwardedImCommand: Sendable, Hashable, BinaryCodable {
    public var shard: ShardID
    public var actor: CommandActor
    public var account: String
    public var command: ImShardCommand
    public var requestKey: RequestKey?

    public init(shard: ShardID, actor: CommandActor, account: String, command: ImShardCommand, requestKey: RequestKey? = nil) {
        self.shard = shard
        self.actor = actor
        self.account = account
        self.command = command
        self.requestKey = requestKey
    }

    /// As `ForwardedCommand.isRead`: no entry, answered by any current replica.
    var isRead: Bool { requestKey == nil && ShardState.isRead(.im(account: account, command)) }

    public func encode(to w: inout ByteWriter) {
        w.write(shard)
        w.write(ApplyContext(commandIndex: 0, timestamp: 0, actor: actor))
        w.write(account)
        w.write(bytes: command.encoded())
        w.write(requestKey)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        shard = try r.readInt()
        actor = try r.read(ApplyContext.self).actor
        account = try r.readString()
        command = try ImShardCommand(decoding: try r.readBytes())
        requestKey = try r.readOptional(RequestKey.self)
    }

    public static func == (a: Self, b: Self) -> Bool { a.encoded() == b.encoded() }
    public func hash(into h: inout Hasher) { h.combine(encoded()) }
}
