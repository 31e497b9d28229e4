/// Issue 33: `/status/cluster` asks every node for its status over the peer port. However many callers poll
/// it (dashboards, scripts; 51 requests a second once raised the server API's latency to 109 ms), a node
/// gathers it at most once per `maxAge`: callers within that time of the last gathering get it, callers that
/// come while one runs wait for that one.
actor ClusterStatusCache {
    private let maxAge: Duration
    private var last: (report: ClusterStatusReport, at: ContinuousClock.Instant)?
    private var running: Task<ClusterStatusReport, any Error>?
    /// How many times the cluster was asked (tests).
    private(set) var gatherings = 0

    init(maxAge: Duration = .seconds(1)) {
        self.maxAge = maxAge
    }

    func report(_ gather: @escaping @Sendable () async throws -> ClusterStatusReport) async throws -> ClusterStatusReport {
        if let last, ContinuousClock.now - last.at < maxAge { return last.report }
        if let running { return try await running.value }
        gatherings += 1
        let task = Task { try await gather() }
        running = task
        defer { running = nil }
        let report = try await task.value
        last = (report, .now)
        return report
    }
}
