import Foundation
import ParleyTestSupport
import ParleyCluster
import ParleyRooms
import Testing

/// The client protocol end to end on real node processes: the Python client written from docs/protocol.md
/// alone (Tests/interop/ws_client_test.py) talks to two different nodes' `/ws`, so the message it checks
/// crosses from one edge to another through the shard's event feed.
@Suite(.serialized, .timeLimit(.minutes(5))) struct EdgeInteropIntegrationTests {
    static let python: String? =
        (try? runToolBlocking("/usr/bin/env", ["python3", "-c", "import websockets"]))?.status == 0 ? "python3" : nil

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
            let ws = { (id: UInt64) in cluster.http(id).replacingOccurrences(of: "http://", with: "ws://") + "/ws" }
            let result = try await Self.runPython("ws_client_test.py", [ws(1), app, room, "ann", "tok-ann", "ben", "tok-ben", ws(2)])
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("interop ok"), "\(result.output)")
        }
    }

    @Test("19: the Python IM client (docs/protocol.md alone) with three users on three nodes",
          .enabled(if: python != nil, "python3 with the `websockets` module is missing (pip install websockets)"))
    func pythonImClientAcrossNodes() async throws {
        try await withLocalCluster { cluster in
            let app = "interop"
            try await Self.start(cluster, app: app, users: ["ann", "ben", "cat"])
            let ws = { (id: UInt64) in cluster.http(id).replacingOccurrences(of: "http://", with: "ws://") + "/ws" }
            let result = try await Self.runPython("im_client_test.py", [app, "ann", "tok-ann", "ben", "tok-ben", "cat", "tok-cat",
                                                                        ws(1), ws(2), ws(3)])
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("im interop ok"), "\(result.output)")
        }
    }

    /// Runs a script of Tests/interop with python3 (`environment` added to this process's), killed after 90 s.
    static func runPython(_ script: String, _ arguments: [String], environment: [String: String] = [:]) async throws
        -> (status: Int32, output: String) {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("interop/\(script)").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + ["python3", path] + arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let deadline = Date().addingTimeInterval(90)
        while p.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        if p.isRunning { p.terminate() }
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, output)
    }
}
