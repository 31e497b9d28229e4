import Foundation
import Hummingbird
import Logging
import NIOCore
import ParleyCluster
import ParleyEdge
import ServiceLifecycle
import Synchronization

/// A real HTTP server on 127.0.0.1 (port 0: the kernel picks) with the edge's WebSocket routes, run the way
/// `NodeRuntime` runs it.
final class EdgeServer: Sendable {
    let edge: Edge
    let cluster: InProcessCluster
    let port: Int
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    static func start(cluster: InProcessCluster = InProcessCluster(), settings: EdgeSettings = .testing,
                      metrics: EdgeMetrics? = nil, tls: ClientTLS? = nil) async throws -> EdgeServer {
        var logger = Logger(label: "edge-test")
        logger.logLevel = .warning
        let edge = Edge(cluster: cluster, settings: settings, logger: logger, metrics: metrics)
        let bound = LockedBox<Int?>(nil)
        let app = Application(
            router: Router(),
            server: EdgeHTTPChannel.server(edge: edge, tls: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in bound.set(channel.localAddress?.port) },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let running = Task { try await group.run() }
        // Generous: on a loaded 2-core machine the whole suite's servers start at once.
        let deadline = ContinuousClock.now + .seconds(30)
        while bound.value == nil {
            guard ContinuousClock.now < deadline else { throw EdgeTestError.timeout("server did not start") }
            try await Task.sleep(for: .milliseconds(10))
        }
        return EdgeServer(edge: edge, cluster: cluster, port: bound.value!, group: group, running: running)
    }

    private init(edge: Edge, cluster: InProcessCluster, port: Int, group: ServiceGroup, running: Task<Void, any Error>) {
        self.edge = edge
        self.cluster = cluster
        self.port = port
        self.group = group
        self.running = running
    }

    var url: String { "ws://127.0.0.1:\(port)/ws" }

    func stop() async {
        await edge.closeAll()
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }

    func connect(path: String = "/ws") async throws -> TestClient {
        try await TestClient.connect(url: "ws://127.0.0.1:\(port)\(path)")
    }

    /// A client that said hello.
    func client() async throws -> TestClient {
        let c = try await connect()
        let answer = try await c.call("hello", ["versions": [1]])
        guard answer["ok"] == .bool(true) else { throw EdgeTestError.unexpected("hello failed: \(answer)") }
        return c
    }
}

extension EdgeSettings {
    /// Short waits so the tests stay fast.
    static var testing: EdgeSettings {
        var s = EdgeSettings()
        s.pollWaitMillis = 300
        s.pollRetryMillis = 50
        s.servesEcho = true
        // The protocol tests make their rooms with bare ids as app "demo": the migration setting that keeps
        // one app's rooms in the empty namespace (A8). `EdgeSessionTests` checks a scoped app's rooms too.
        s.legacyRoomsApp = Fixture.app
        return s
    }
}

enum EdgeTestError: Error {
    case timeout(String)
    case unexpected(String)
}

/// A value shared between tasks and escaping closures (a `Mutex` itself cannot be captured: it is not copyable).
final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    var value: Value { mutex.withLock { $0 } }

    func set(_ value: Value) {
        mutex.withLock { $0 = value }
    }
}
