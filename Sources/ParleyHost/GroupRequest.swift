import ParleyRooms
import ParleyWire
import ParleyShardState
import ParleyPlacement

/// Issue 34: the one form of a command into a group, the same bytes on every road and in the log — the body
/// of a peer's call to the group's leader (`/rpc/v1/propose`, `/rpc/v1/meta/request`) and, from peer protocol
/// 17, a log entry's request as the leader received it (`GroupProposal`): the shard (the meta group's:
/// `RaftHost.metaShard`), who acts, the command, and the signed server-API request it belongs to (SPEC A7),
/// if any. `ShardRequest` and `MetaRequest` are its two kinds.
///
/// The form is the one `/rpc/v1/propose` always read: the shard, an `ApplyContext` with the actor (the index and
/// the time are the log's, so 0 here), the command, and the request key last, only when there is one.
public struct GroupRequest<Command: BinaryCodable & Sendable>: Sendable, BinaryCodable {
    public var shard: ShardID
    public var actor: CommandActor
    public var command: Command
    public var requestKey: RequestKey?

    public init(shard: ShardID, actor: CommandActor, command: Command, requestKey: RequestKey? = nil) {
        self.shard = shard
        self.actor = actor
        self.command = command
        self.requestKey = requestKey
    }

    public func encode(to w: inout ByteWriter) {
        w.write(shard)
        w.write(ApplyContext(commandIndex: 0, timestamp: 0, actor: actor))
        w.write(command)
        // After the command, so a request without a key reads as before.
        if let requestKey { w.write(requestKey) }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        shard = try r.readInt()
        actor = try r.read(ApplyContext.self).actor
        command = try r.read()
        requestKey = r.isAtEnd ? nil : try r.read(RequestKey.self)
    }
}

extension GroupRequest: Equatable where Command: Equatable {}
extension GroupRequest: Hashable where Command: Hashable {}

/// A meta command on its way to the meta group's leader.
public typealias MetaRequest = GroupRequest<MetaCommand>

extension GroupRequest where Command == MetaCommand {
    /// The meta group's request: the app server acts (the registry, placement and apps are the cluster's own).
    public static func meta(_ command: MetaCommand, requestKey: RequestKey? = nil) -> MetaRequest {
        MetaRequest(shard: RaftHost.metaShard, actor: .appServer, command: command, requestKey: requestKey)
    }

    /// Reads the body `/rpc/v1/meta/propose` takes from nodes before peer protocol 17: the command, then the
    /// request key when there is one.
    public init(legacyMetaBody body: [UInt8]) throws(CodecError) {
        var r = ByteReader(body)
        let command = try r.read(MetaCommand.self)
        self = .meta(command, requestKey: r.isAtEnd ? nil : try r.read(RequestKey.self))
    }

    /// `legacyMetaBody`'s form, for a meta leader older than peer protocol 17.
    public func legacyMetaBody() -> [UInt8] {
        var w = ByteWriter()
        w.write(command)
        if let requestKey { w.write(requestKey) }
        return w.bytes
    }
}
