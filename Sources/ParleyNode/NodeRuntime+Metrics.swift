import ParleyAPI

import Foundation
import ParleyCluster

extension NodeRuntime: MetricsSource {
    /// Node `node`'s status over the peer port (`/rpc/v1/status`): the cluster page needs no node's HTTP or
    /// operator address, and a peer's status is as authenticated as its Raft traffic.
    public func peerStatus(_ node: UInt64) async throws -> NodeStatusReport {
        let response = try await transport.call(node, path: Self.statusPath, body: [], timeout: .milliseconds(1_500)).get()
        guard response.status == 200 else { throw RouteError.peerRefused(response.status) }
        return try JSONDecoder().decode(NodeStatusReport.self, from: Data(response.body))
    }

    static let statusPath = "/rpc/v1/status"

    public func metricsExposition() async -> [UInt8] {
        metrics.update(from: await statusReport(withDigests: false))
        return metrics.exposition()
    }
}
