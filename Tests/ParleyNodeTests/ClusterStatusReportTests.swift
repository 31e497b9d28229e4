import Testing
@testable import ParleyAPI

/// How `/status/cluster` finds a node's HTTP port from what the node registered.
@Suite struct ClusterStatusReportTests {
    @Test func aNodeListeningOnEveryInterfaceIsReachedAtItsPeerHost() {
        #expect(ClusterStatusReport.reachableAddress(http: "0.0.0.0:8101", peer: "parley-2:7101") == "parley-2:8101")
        #expect(ClusterStatusReport.reachableAddress(http: "[::]:8101", peer: "10.0.0.7:7101") == "10.0.0.7:8101")
        #expect(ClusterStatusReport.reachableAddress(http: "10.0.0.5:8101", peer: "10.0.0.6:7101") == "10.0.0.5:8101")
        #expect(ClusterStatusReport.reachableAddress(http: "127.0.0.1:18501", peer: "127.0.0.1:17601") == "127.0.0.1:18501")
    }

    @Test func withoutAMetaViewOnlyTheLocalNodeIsListed() async {
        let local = NodeStatusReport(node: 4, version: "t", uptimeSeconds: 1, httpAddress: "127.0.0.1:1", peerAddress: "127.0.0.1:2",
                                     shardCount: 1, healthy: true, peers: [], shards: [], meta: nil)
        let report = await ClusterStatusReport.gather(local: local)
        #expect(report == ClusterStatusReport(gatheredBy: 4, nodes: [.init(id: 4, httpAddress: "127.0.0.1:1", state: nil,
                                                                           status: local, error: nil)]))
    }
}
