import Foundation
import Hummingbird

/// Where the status routes get their figures (the node runtime).
public protocol StatusSource: Sendable {
    func statusReport(withDigests: Bool) async -> NodeStatusReport
}

/// `GET /status` (JSON), `GET /healthz` (the process answers) and `GET /readyz` (every hosted shard
/// knows its leader; 503 until then).
public enum StatusRoutes {
    public static func add<Context: RequestContext>(to router: Router<Context>, source: some StatusSource) {
        router.get("/status") { request, _ -> Response in
            let digests = request.uri.queryParameters.get("digest") == "true"
            let report = await source.statusReport(withDigests: digests)
            return try json(report)
        }
        router.get("/healthz") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        router.get("/readyz") { _, _ -> Response in
            let ready = await source.statusReport(withDigests: false).ready
            return Response(status: ready ? .ok : .serviceUnavailable, headers: [.contentType: "text/plain"],
                            body: .init(byteBuffer: ByteBuffer(string: ready ? "ready\n" : "not ready: a shard has no leader\n")))
        }
    }

    static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        return Response(status: .ok, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
