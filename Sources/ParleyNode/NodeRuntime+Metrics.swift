import ParleyAPI

extension NodeRuntime: MetricsSource {
    public func metricsExposition() async -> [UInt8] {
        metrics.update(from: await statusReport(withDigests: false))
        return metrics.exposition()
    }
}
