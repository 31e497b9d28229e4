import Metrics
import ParleyAPI
import ParleyCluster
import ParleyStorage
import Prometheus
import Synchronization

/// One node's Prometheus registry and the factory every component of the node records through. Each
/// `NodeRuntime` owns its own, so several nodes in one test process never share or collide; `parley node`
/// also installs the factory as the process-wide `MetricsSystem` (once) for libraries that use the global.
///
/// Counters and histograms are fed where things happen (RaftHost, PeerLink, NodeDatabase, the edge);
/// the gauges below are state, so they are read from `/status` figures when `/metrics` is scraped.
public final class NodeMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let factory: PrometheusMetricsFactory
    /// For the edge engineer's sessions and fan-out; see `EdgeMetrics` for the names.
    public let edge: EdgeMetrics

    private let applyLag: Metrics.Gauge
    private let rooms: Metrics.Gauge
    private let shardsHosted: Metrics.Gauge
    private let shardsLed: Metrics.Gauge
    private let imPending: Metrics.Gauge
    /// SPEC D1: bytes held in memory by part (estimates, as /status's `memory`), and the resident set.
    private let memoryRaftLog: Metrics.Gauge
    private let memoryFeeds: Metrics.Gauge
    private let memoryWindows: Metrics.Gauge
    private let memoryImLogs: Metrics.Gauge
    private let memoryResident: Metrics.Gauge
    private let peerGauges = Mutex<[UInt64: PeerGauges]>([:])

    private struct PeerGauges {
        var queued: Metrics.Gauge
        var connected: Metrics.Gauge
        var unreachable: Metrics.Gauge
    }

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Group commit is one SQLite transaction and fsync: sub-millisecond on fast disks, tens of
        // milliseconds on slow ones; the default buckets start at 5 ms and would hide it.
        factory.durationHistogramBuckets[NodeDatabase.commitTimeMetric] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .seconds(1),
        ]
        // A client's request, read to answered: a millisecond or two on a quiet cluster, up to seconds while
        // a shard elects a leader.
        factory.durationHistogramBuckets[EdgeMetrics.requestTimeName] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2), .seconds(5), .seconds(10),
        ]
        self.factory = factory
        edge = EdgeMetrics(factory: factory)
        applyLag = Metrics.Gauge(label: "parley_raft_apply_lag_entries", factory: factory)
        rooms = Metrics.Gauge(label: "parley_rooms", factory: factory)
        shardsHosted = Metrics.Gauge(label: "parley_shards_hosted", factory: factory)
        shardsLed = Metrics.Gauge(label: "parley_shards_led", factory: factory)
        imPending = Metrics.Gauge(label: "parley_im_effects_pending", factory: factory)
        memoryRaftLog = Metrics.Gauge(label: "parley_memory_raft_log_bytes", factory: factory)
        memoryFeeds = Metrics.Gauge(label: "parley_memory_feed_bytes", factory: factory)
        memoryWindows = Metrics.Gauge(label: "parley_memory_history_window_bytes", factory: factory)
        memoryImLogs = Metrics.Gauge(label: "parley_memory_im_log_window_bytes", factory: factory)
        memoryResident = Metrics.Gauge(label: "parley_memory_resident_bytes", factory: factory)
    }

    /// Sets the scrape-time gauges from a status report:
    /// - `parley_raft_apply_lag_entries`: Σ (commit − applied) over the shard replicas on this node;
    /// - `parley_rooms`: rooms in the shards this node leads (summed over nodes: the cluster's rooms);
    /// - `parley_shards_hosted` / `parley_shards_led`;
    /// - `parley_im_effects_pending`: IM effects the shards this node leads produced and their targets have not
    ///   confirmed yet (issue 19: the relay's backlog; alert when it stays above 0 for long);
    /// - `parley_transport_queued_batches{peer}` / `parley_transport_peer_connected{peer}`;
    /// - `parley_transport_peer_unreachable_seconds{peer}`: 0 while the link is up, else the seconds since it
    ///   was last up (since this node started, if it never was) — alert on it staying above a few seconds.
    public func update(from report: NodeStatusReport) {
        applyLag.record(report.shards.reduce(UInt64(0)) { $0 + ($1.commit >= $1.applied ? $1.commit - $1.applied : 0) })
        let led = report.shards.filter { $0.role == "leader" }
        rooms.record(led.reduce(0) { $0 + $1.rooms })
        shardsHosted.record(report.shards.count)
        shardsLed.record(led.count)
        imPending.record(led.reduce(0) { $0 + ($1.imPending ?? 0) })
        if let m = report.memory {
            memoryRaftLog.record(m.raftLogBytes)
            memoryFeeds.record(m.feedBytes)
            memoryWindows.record(m.historyWindowBytes)
            if let im = m.imLogWindowBytes { memoryImLogs.record(im) }
            if let rss = m.rssBytes { memoryResident.record(rss) }
        }
        for peer in report.peers {
            let gauges = peerGauges.withLock { all in
                if let g = all[peer.id] { return g }
                let labels = [("peer", "\(peer.id)")]
                let g = PeerGauges(
                    queued: Metrics.Gauge(label: "parley_transport_queued_batches", dimensions: labels, factory: factory),
                    connected: Metrics.Gauge(label: "parley_transport_peer_connected", dimensions: labels, factory: factory),
                    unreachable: Metrics.Gauge(label: "parley_transport_peer_unreachable_seconds", dimensions: labels,
                                               factory: factory))
                all[peer.id] = g
                return g
            }
            gauges.queued.record(peer.queuedBatches)
            gauges.connected.record(peer.connected ? 1 : 0)
            gauges.unreachable.record(peer.lastConnectedSecondsAgo ?? report.uptimeSeconds)
        }
    }

    /// The registry in Prometheus text format.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 << 10)
        registry.emit(into: &buffer)
        return buffer
    }
}
