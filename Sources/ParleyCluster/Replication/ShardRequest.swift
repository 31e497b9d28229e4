import ParleyHost
import ParleyIM
import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyShardState
import ParleyTransport
import ParleyPlacement

/// Issue 34: the one typed request into a shard, for every road — a client's room or IM command, the server
/// API's, the IM relay's: the shard, who acts, the command and the server-API request it belongs to (SPEC A7),
/// if any. `RaftDriver.submit(_:deadline:)` takes it to the shard's leader, which checks it (A1, W3) and
/// appends it; a node that does not lead sends it there as the body of `POST /rpc/v1/propose`, and from peer
/// protocol 17 the leader puts that body into the entry as it came (`GroupRequest`, `GroupProposal` form 4).
///
/// A room command's form is the one `/rpc/v1/propose` always read; an IM command's is new in peer protocol 16
/// (`PeerProtocol.Feature.shardRequests`): to an older node it goes to `/rpc/v1/im/propose` in that call's own
/// form (`legacyImBody`).
public typealias ShardRequest = GroupRequest<ShardCommand>

extension GroupRequest where Command == ShardCommand {
    public static func room(shard: ShardID, actor: CommandActor, command: RoomCommand,
                            requestKey: RequestKey? = nil) -> ShardRequest {
        ShardRequest(shard: shard, actor: actor, command: .room(command), requestKey: requestKey)
    }

    /// An IM command for `account` (app-scoped; empty for the relay's own commands).
    public static func im(shard: ShardID, actor: CommandActor, account: String, command: ImShardCommand,
                          requestKey: RequestKey? = nil) -> ShardRequest {
        ShardRequest(shard: shard, actor: actor, command: .im(account: account, command), requestKey: requestKey)
    }

    /// A command that changes nothing and carries no request key: answered by any current replica (a read
    /// index), never appended. A signed server-API read rides the log for its request key, as a write does.
    var isRead: Bool { requestKey == nil && ShardState.isRead(command) }

    // MARK: `/rpc/v1/im/propose`, for nodes before peer protocol 16

    /// An IM command in the form `/rpc/v1/im/propose` reads (protocol 3 to 15): the shard, the context, the
    /// account, the command's bytes, an optional request key. Nil for any other command.
    public func legacyImBody() -> [UInt8]? {
        guard case .im(let account, let command) = command else { return nil }
        var w = ByteWriter()
        w.write(shard)
        w.write(ApplyContext(commandIndex: 0, timestamp: 0, actor: actor))
        w.write(account)
        w.write(bytes: command.encoded())
        w.write(requestKey)
        return w.bytes
    }

    /// Reads `legacyImBody`'s form.
    public init(legacyImBody body: [UInt8]) throws(CodecError) {
        var r = ByteReader(body)
        let shard = try r.readInt()
        let actor = try r.read(ApplyContext.self).actor
        let account = try r.readString()
        let command = ShardCommand.im(account: account, try ImShardCommand(decoding: try r.readBytes()))
        self.init(shard: shard, actor: actor, command: command, requestKey: try r.readOptional(RequestKey.self))
    }
}
