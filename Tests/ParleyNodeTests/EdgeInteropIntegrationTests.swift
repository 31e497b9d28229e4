import Foundation
import ParleyCluster
import ParleyRooms
import Testing

/// The client protocol end to end on real node processes: the Python client written from docs/protocol.md
/// alone (Tests/interop/ws_client_test.py) talks to two different nodes' `/ws`, so the message it checks
/// crosses from one edge to another through the shard's event feed.
@Suite(.serialized, .timeLimit(.minutes(5))) struct EdgeInteropIntegrationTests {
    static let python: String? =
        (try? runTool("/usr/bin/env", ["python3", "-c", "import websockets"]))?.status == 0 ? "python3" : nil

    /// Starts the cluster and registers the app and its users (token `tok-NAME`) through the meta group.
    static func start(_ cluster: LocalCluster, app: String, users: [String]) async throws {
        try cluster.startAll()
        try await cluster.waitForLeaders()
        try await cluster.eventually("the app to register") {
            (try? await cluster.proposeMeta(.putApp(cluster.secrets.app(app, secret: String(repeating: "k", count: 32))))) == .done
        }
        for account in users {
            #expect(try await cluster.proposeMeta(.putUser(cluster.secrets.user(appKey: app, account: account, token: "tok-\(account)"))) == .done)
        }
    }

    @Test("E1 E4 E5 N1: the Python client against two real nodes",
          .enabled(if: python != nil, "python3 with the `websockets` module is missing (pip install websockets)"))
    func pythonClientAcrossNodes() async throws {
        try await withLocalCluster { cluster in
            let app = "interop"
            try await Self.start(cluster, app: app, users: ["ann", "ben"])
            let room = "interop-room"
            let scoped = AppScope.scoped(room, in: app)  // the cluster's id of the app's room (A8)
            let created = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: "ann", name: "Interop")),
                                                   room: scoped, via: 1)
            #expect(created.errorCode == nil)
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("interop/ws_client_test.py").path
            let ws = { (id: UInt64) in cluster.http(id).replacingOccurrences(of: "http://", with: "ws://") + "/ws" }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["python3", script, ws(1), app, room, "ann", "tok-ann", "ben", "tok-ben", ws(2)]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            let deadline = Date().addingTimeInterval(90)
            while p.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
            if p.isRunning { p.terminate() }
            p.waitUntilExit()
            let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(p.terminationStatus == 0, "\(output)")
            #expect(output.contains("interop ok"), "\(output)")
        }
    }

    @Test("19: the Python IM client (docs/protocol.md alone) with three users on three nodes",
          .enabled(if: python != nil, "python3 with the `websockets` module is missing (pip install websockets)"))
    func pythonImClientAcrossNodes() async throws {
        try await withLocalCluster { cluster in
            let app = "interop"
            try await Self.start(cluster, app: app, users: ["ann", "ben", "cat"])
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("interop/im_client_test.py").path
            let ws = { (id: UInt64) in cluster.http(id).replacingOccurrences(of: "http://", with: "ws://") + "/ws" }
            let result = try runTool("/usr/bin/env", ["python3", script, app, "ann", "tok-ann", "ben", "tok-ben", "cat", "tok-cat",
                                                      ws(1), ws(2), ws(3)])
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("im interop ok"), "\(result.output)")
        }
    }
}
