import NIOCore
import ParleyTransport
import ParleyWire
import ParleyPlacement

/// One RPC a node serves to its peers and to the cluster tool: its path, the shard whose Raft loop serves it,
/// and what answers it. Each concern of the driver keeps its own list (`RaftDriver.commandCalls`,
/// `feedCalls`, `imCalls`, `balanceCalls`, `membershipCalls`, `drainCalls`), and `RaftLoops.handle` finds a
/// request's call in one table.
struct PeerCall: Sendable {
    let path: String
    /// The shard the request is about, read from its body, so a node with several Raft loops hands it to that
    /// shard's (issue 35); nil — a node-wide call, the meta group's, or a body that does not read — the first
    /// loop's, whose driver answers for the node.
    let shard: @Sendable (_ body: [UInt8], _ shardMap: ShardMap) -> ShardID?
    let serve: @Sendable (RaftDriver, PeerRequest) -> EventLoopFuture<PeerResponse>

    init(path: String, shard: @escaping @Sendable ([UInt8], ShardMap) -> ShardID? = { _, _ in nil },
         serve: @escaping @Sendable (RaftDriver, PeerRequest) -> EventLoopFuture<PeerResponse>) {
        self.path = path
        self.shard = shard
        self.serve = serve
    }

    /// The calls by path; two calls for one path are a programming error, caught when the table is built.
    static func table(_ calls: [PeerCall]) -> [String: PeerCall] {
        var table: [String: PeerCall] = [:]
        for call in calls {
            precondition(table[call.path] == nil, "two peer calls for \(call.path)")
            table[call.path] = call
        }
        return table
    }

    /// For calls whose body starts with the shard (a forwarded command, an event poll, a transfer).
    static let leadingShard: @Sendable ([UInt8], ShardMap) -> ShardID? = { body, _ in
        var r = ByteReader(body)
        return try? r.readInt()
    }

    /// For calls whose body starts with a group id.
    static let leadingGroup: @Sendable ([UInt8], ShardMap) -> ShardID? = { body, shardMap in
        var r = ByteReader(body)
        return (try? r.readUInt64()).flatMap(shardMap.shard(ofGroup:))
    }
}
