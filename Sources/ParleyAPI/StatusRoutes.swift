import Foundation
import Hummingbird
import ParleyRooms

/// Where the status routes get their figures (the node runtime).
public protocol StatusSource: Sendable {
    func statusReport(withDigests: Bool) async -> NodeStatusReport
    /// The shard of a room (nil for a room id that is not valid).
    func shard(ofRoom roomID: String) -> Int?
    var shardCount: Int { get }
    func placement(ofShard shard: Int) async throws -> ShardPlacementReport
}

/// Where a shard (and a room in it) lives.
public struct ShardPlacementReport: Codable, Sendable, Equatable {
    public var roomId: String?
    public var shard: Int
    public var replicas: [UInt64]
    /// 0 while no leader is known.
    public var leader: UInt64

    public init(roomId: String? = nil, shard: Int, replicas: [UInt64], leader: UInt64) {
        self.roomId = roomId
        self.shard = shard
        self.replicas = replicas
        self.leader = leader
    }
}

/// `GET /status` (JSON), `GET /healthz` (the process answers) and `GET /readyz` (the node is registered in
/// the meta group and every hosted shard knows its leader; 503 with the reason until then).
public enum StatusRoutes {
    public static func add<Context: RequestContext>(to router: Router<Context>, source: some StatusSource) {
        addOperatorRoutes(to: router, source: source)
        addProbes(to: router, source: source)
    }

    /// `/status` and `/placement/…`: for operators (SPEC A4: on `--ops-listen` when it is set).
    public static func addOperatorRoutes<Context: RequestContext>(to router: Router<Context>, source: some StatusSource) {
        router.get("/status") { request, _ -> Response in
            let digests = request.uri.queryParameters.get("digest") == "true"
            let report = await source.statusReport(withDigests: digests)
            return try json(report)
        }
        // "Which node leads shard S / holds room R", answered by any node.
        // `?app=KEY` for a room of that app (A8: each app's rooms live in its namespace); without it, a room
        // of the legacy namespace.
        router.get("/placement/rooms/:roomId") { request, context -> Response in
            guard let roomID = context.parameters.get("roomId"), AppScope.isLocal(roomID) else {
                return plain(.badRequest, "bad room id\n")
            }
            let scoped = request.uri.queryParameters.get("app").map { AppScope.scoped(roomID, in: $0) } ?? roomID
            guard let shard = source.shard(ofRoom: scoped) else { return plain(.badRequest, "bad room id\n") }
            var placement = try await source.placement(ofShard: shard)
            placement.roomId = roomID
            return try json(placement)
        }
        router.get("/placement/shards/:shard") { _, context -> Response in
            guard let shard = context.parameters.get("shard", as: Int.self), (0..<source.shardCount).contains(shard) else {
                return plain(.notFound, "no such shard\n")
            }
            return try json(try await source.placement(ofShard: shard))
        }
    }

    /// `/healthz` and `/readyz`: for load balancers and orchestrators, on every listener.
    public static func addProbes<Context: RequestContext>(to router: Router<Context>, source: some StatusSource) {
        router.get("/healthz") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        router.get("/readyz") { _, _ -> Response in
            if let why = await source.statusReport(withDigests: false).notReadyBecause {
                return plain(.serviceUnavailable, "not ready: \(why)\n")
            }
            return plain(.ok, "ready\n")
        }
    }

    static func plain(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        return Response(status: .ok, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
