import Foundation
import ParleyCluster
import ParleyEdge
import ParleyRooms

/// App, users and rooms the protocol tests share.
enum Fixture {
    static let app = "demo"

    static func server(limits: RoomLimits = RoomLimits(), settings: EdgeSettings = .testing,
                       metrics: EdgeMetrics? = nil) async throws -> EdgeServer {
        try await EdgeServer.start(cluster: try await cluster(limits: limits), settings: settings, metrics: metrics)
    }

    /// The app, alice, bob and carol (token `t-NAME`) and room r1.
    static func cluster(limits: RoomLimits = RoomLimits()) async throws -> InProcessCluster {
        let cluster = InProcessCluster(limits: limits)
        cluster.addApp(app)
        for user in ["alice", "bob", "carol"] {
            cluster.addUser(appKey: app, account: user, token: "t-\(user)")
        }
        try await cluster.createRoom("r1", creator: "alice")
        return cluster
    }

    static func auth(_ account: String, mode: String = "independent") -> [String: Any] {
        ["mode": mode, "appKey": app, "account": account, "token": "t-\(account)"]
    }

    static func enter(_ account: String, room: String = "r1", extra: [String: Any] = [:]) -> [String: Any] {
        var fields: [String: Any] = ["roomId": room, "auth": auth(account), "nickname": account.capitalized]
        for (k, v) in extra { fields[k] = v }
        return fields
    }
}

extension EdgeServer {
    /// Two connections with alice and bob in room r1: where most protocol tests start.
    func aliceAndBobInRoom() async throws -> (TestClient, TestClient) {
        let a = try await client()
        let b = try await client()
        try await a.enter("alice")
        try await b.enter("bob")
        return (a, b)
    }
}

extension TestClient {
    /// Enters and checks the answer is ok.
    @discardableResult
    func enter(_ account: String, room: String = "r1", extra: [String: Any] = [:]) async throws -> JSONValue {
        let answer = try await call("enter", Fixture.enter(account, room: room, extra: extra))
        guard answer["ok"] == .bool(true) else { throw EdgeTestError.unexpected("enter failed: \(answer)") }
        return answer
    }
}
