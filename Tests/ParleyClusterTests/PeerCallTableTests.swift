import Testing
@testable import ParleyCluster

/// Issue 34: a node's peer RPCs are one typed table (`RaftDriver.peerCalls`) made from the lists each concern
/// keeps, not a switch over path strings. The surface is listed here: a call added, removed or renamed shows.
@Suite struct PeerCallTableTests {
    @Test("every peer RPC path, each served by exactly one call")
    func theTableHoldsEveryCallOnce() {
        let expected: Set<String> = [
            "/rpc/v1/propose", "/rpc/v1/submit", "/rpc/v1/leader", "/rpc/v1/meta/request", "/rpc/v1/meta/propose",
            "/rpc/v1/meta/state",
            "/rpc/v1/events", "/rpc/v1/im/propose", "/rpc/v1/leads", "/rpc/v1/transfer",
            "/rpc/v1/join", "/rpc/v1/cluster/remove", "/rpc/v1/members", "/rpc/v1/cluster/drain", "/rpc/v1/cluster/undrain",
        ]
        #expect(Set(RaftDriver.peerCalls.keys) == expected)
        let lists = RaftDriver.commandCalls + RaftDriver.feedCalls + RaftDriver.imCalls + RaftDriver.balanceCalls
            + RaftDriver.membershipCalls + RaftDriver.drainCalls
        #expect(lists.count == expected.count, "no path listed twice")
        for (path, call) in RaftDriver.peerCalls { #expect(call.path == path) }
    }
}
