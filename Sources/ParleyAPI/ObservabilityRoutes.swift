import Foundation
import Hummingbird

/// A node's figures beyond `/status`: its Prometheus registry.
public protocol MetricsSource: StatusSource {
    /// The Prometheus text exposition of this node's registry, with the gauges that are read at scrape time
    /// (apply lag, rooms, queue depths) brought up to date first.
    func metricsExposition() async -> [UInt8]
    /// Another node's `/status`, asked over the peer port.
    func peerStatus(_ node: UInt64) async throws -> NodeStatusReport
}

/// `GET /metrics` (Prometheus text format 0.0.4), `GET /status/cluster` (every registered node's
/// `/status`, gathered by this node) and `GET /dashboard` (a self-contained page that polls
/// `/status/cluster`).
public enum ObservabilityRoutes {
    public static func add<Context: RequestContext>(to router: Router<Context>, source: some MetricsSource) {
        router.get("/metrics") { _, _ -> Response in
            let text = await source.metricsExposition()
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: text)))
        }
        let cluster = ClusterStatusCache()
        router.get("/status/cluster") { _, _ -> Response in
            try StatusRoutes.json(try await cluster.report {
                let local = await source.statusReport(withDigests: false)
                return await ClusterStatusReport.gather(local: local) { id, _ in try await source.peerStatus(id) }
            })
        }
        router.get("/dashboard") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                     body: .init(byteBuffer: ByteBuffer(string: DashboardPage.html)))
        }
    }
}
