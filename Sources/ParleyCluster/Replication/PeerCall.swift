import NIOCore
import ParleyTransport

/// One RPC a node serves to its peers and to the cluster tool: its path and what answers it. Each concern of
/// the driver keeps its own list (`RaftDriver.commandCalls`, `feedCalls`, `imCalls`, `balanceCalls`,
/// `membershipCalls`, `drainCalls`), and `RaftDriver.handle` finds a request's call in one table.
struct PeerCall: Sendable {
    let path: String
    let serve: @Sendable (RaftDriver, PeerRequest) -> EventLoopFuture<PeerResponse>

    init(path: String, serve: @escaping @Sendable (RaftDriver, PeerRequest) -> EventLoopFuture<PeerResponse>) {
        self.path = path
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
}
