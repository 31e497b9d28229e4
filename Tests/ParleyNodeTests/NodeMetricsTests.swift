import Metrics
import Testing
import ParleyAPI
import ParleyNode

/// One registry per node: two nodes in one process keep their own figures, and the scrape-time gauges are
/// computed from `/status` figures.
@Suite struct NodeMetricsTests {
    private func shard(_ id: Int, role: String, commit: UInt64, applied: UInt64, rooms: Int) -> NodeStatusReport.Shard {
        .init(shard: id, role: role, term: 3, leader: role == "leader" ? 1 : 2, commit: commit, applied: applied,
              logSize: commit, lastSnapshot: 0, rooms: rooms, quiesced: false, digest: nil)
    }

    @Test func twoNodesInOneProcessKeepSeparateRegistries() {
        let a = NodeMetrics()
        let b = NodeMetrics()
        a.edge.connections.increment()
        a.edge.connections.increment()
        a.edge.connections.decrement()
        a.edge.fanoutDeliveries.increment(by: 5)
        Counter(label: "parley_test_only_total", factory: b.factory).increment()
        let textA = PrometheusText(text: String(decoding: a.exposition(), as: UTF8.self))
        let textB = PrometheusText(text: String(decoding: b.exposition(), as: UTF8.self))
        #expect(textA.value("parley_edge_connections") == 1)
        #expect(textA.value("parley_edge_fanout_deliveries_total") == 5)
        #expect(textA.value("parley_test_only_total") == nil)
        #expect(textB.value("parley_edge_connections") == 0)
        #expect(textB.value("parley_test_only_total") == 1)
    }

    @Test func scrapeGaugesSumLagOverReplicasAndRoomsOverLedShards() {
        let m = NodeMetrics()
        let report = NodeStatusReport(
            node: 1, version: "t", uptimeSeconds: 40, httpAddress: "h:1", peerAddress: "h:2", shardCount: 3, healthy: true,
            peers: [.init(id: 2, address: "h:3", connected: true, queuedBatches: 0, droppedBatches: 0,
                          lastConnectedSecondsAgo: 0),
                    .init(id: 3, address: "h:4", connected: false, queuedBatches: 7, droppedBatches: 2,
                          connectFailures: 9, lastError: "refused", lastErrorSecondsAgo: 1, lastConnectedSecondsAgo: 12.5),
                    .init(id: 4, address: "h:5", connected: false, queuedBatches: 0, droppedBatches: 0,
                          connectFailures: 30, lastError: "refused", lastErrorSecondsAgo: 1)],
            shards: [shard(0, role: "leader", commit: 10, applied: 8, rooms: 4),
                     shard(1, role: "follower", commit: 5, applied: 5, rooms: 9),
                     shard(2, role: "leader", commit: 7, applied: 4, rooms: 1)],
            meta: nil)
        m.update(from: report)
        let text = PrometheusText(text: String(decoding: m.exposition(), as: UTF8.self))
        #expect(text.value("parley_raft_apply_lag_entries") == 5)
        #expect(text.value("parley_rooms") == 5)
        #expect(text.value("parley_shards_hosted") == 3)
        #expect(text.value("parley_shards_led") == 2)
        #expect(text.value("parley_transport_queued_batches", ["peer": "3"]) == 7)
        #expect(text.value("parley_transport_peer_connected", ["peer": "2"]) == 1)
        #expect(text.value("parley_transport_peer_connected", ["peer": "3"]) == 0)
        // Issue 15: how long each link has been down (since start for one never up), 0 for one that is up.
        #expect(text.value("parley_transport_peer_unreachable_seconds", ["peer": "2"]) == 0)
        #expect(text.value("parley_transport_peer_unreachable_seconds", ["peer": "3"]) == 12.5)
        #expect(text.value("parley_transport_peer_unreachable_seconds", ["peer": "4"]) == 40)
    }
}
