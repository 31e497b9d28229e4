import Foundation
import ParleyNode
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyCluster
import ParleyRooms
import Testing

/// The Swift SDK against real node processes: two `ChatroomClient`s enter one room through different
/// nodes' edges, exchange messages, and must see the same messages in the same order (invariant 3), then one
/// loses its edge and resumes on another node without duplicates or holes (E8, X2).
@Suite(.serialized, .timeLimit(.minutes(5))) struct ClientEndToEndTests {
    /// Collects one client's events.
    actor Inbox {
        private(set) var events: [ChatroomEvent] = []
        init(_ client: ChatroomClient) {
            let stream = client.events
            Task { await self.read(stream) }
        }
        private func read(_ stream: AsyncStream<ChatroomEvent>) async { for await e in stream { events.append(e) } }
        func messages(_ room: String) -> [Message] {
            events.compactMap { if case .message(room, let m) = $0 { m } else { nil } }
        }
        func count(_ state: ConnectionState, _ room: String) -> Int {
            events.filter { $0 == .connectionState(roomId: room, state) }.count
        }
    }

    static func setUp(_ cluster: LocalCluster, app: String, room: String, accounts: [String]) async throws {
        try cluster.startAll()
        try await cluster.waitForLeaders()
        try await cluster.eventually("the app to register") {
            (try? await cluster.proposeMeta(.putApp(cluster.secrets.app(app, secret: String(repeating: "k", count: 32))))) == .done
        }
        for account in accounts {
            #expect(try await cluster.proposeMeta(.putUser(cluster.secrets.user(appKey: app, account: account, token: "tok-\(account)"))) == .done)
        }
        let scoped = AppScope.scoped(room, in: app)  // the cluster's id of the app's room (A8)
        let created = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: accounts[0], name: "SDK")), room: scoped, via: 1)
        #expect(created.errorCode == nil)
    }

    static func address(_ cluster: LocalCluster, _ id: UInt64) -> String {
        cluster.http(id).replacingOccurrences(of: "http://", with: "")
    }

    @Test("E1 E5 E6 N1 N5: two SDK clients on two nodes see the same messages in the same order")
    func twoClientsOnTwoNodes() async throws {
        try await withLocalCluster { cluster in
            let app = "sdk-e2e", room = "sdk-room"
            try await Self.setUp(cluster, app: app, room: room, accounts: ["ann", "ben"])
            let ann = ChatroomClient(configuration: .addresses([Self.address(cluster, 1)]))
            let ben = ChatroomClient(configuration: .addresses([Self.address(cluster, 2)]))
            let annInbox = Inbox(ann), benInbox = Inbox(ben)
            let entered = try await ann.enterChatroom(ChatroomEnterRequest(
                roomId: room, auth: .independent(appKey: app, account: "ann", token: "tok-ann"), nickname: "Ann"))
            #expect(entered.account == "ann" && entered.authMode == .independent && entered.room.roomId == room)
            try await ben.enterChatroom(ChatroomEnterRequest(
                roomId: room, auth: .independent(appKey: app, account: "ben", token: "tok-ben"), nickname: "Ben"))
            for i in 0..<5 {
                try await ann.sendMessage(room, body: "ann-\(i)")
                try await ben.sendMessage(room, body: "ben-\(i)")
            }
            try await cluster.eventually("both see 10 messages") {
                let a = await annInbox.messages(room).count, b = await benInbox.messages(room).count
                return a >= 10 && b >= 10
            }
            let a = await annInbox.messages(room), b = await benInbox.messages(room)
            #expect(a.map(\.seq) == b.map(\.seq))
            #expect(a.map(\.body) == b.map(\.body))
            #expect(a.map(\.seq) == a.map(\.seq).sorted() && Set(a.map(\.seq)).count == a.count)
            #expect(Set(a.map(\.body)) == Set((0..<5).flatMap { ["ann-\($0)", "ben-\($0)"] }))
            // N5: the same order in history.
            let history = try await ben.fetchMessageHistory(room, query: HistoryQuery(limit: 100, order: .asc))
            let stored = history.compactMap { if case .message(let m) = $0 { m.body } else { nil } }
            #expect(stored == a.map(\.body))
            // The edge's figures on /status and /metrics: node 1 holds Ann's connection and session, and has
            // fanned the room's events out to her.
            let status = try await cluster.status(1)
            let edge = try #require(status.edge)
            #expect(edge.connections >= 1 && edge.sessions >= 1 && edge.feeds >= 1)
            #expect(edge.fanoutEvents >= 10 && edge.fanoutDeliveries >= 10)
            let (body, _) = try await ToolHTTP.shared.data(from: URL(string: cluster.http(1) + "/metrics")!)
            let metrics = PrometheusText(text: String(decoding: body, as: UTF8.self))
            #expect((metrics.value("parley_edge_sessions") ?? 0) >= 1)
            #expect((metrics.value("parley_edge_fanout_deliveries_total") ?? 0) >= 10)
            try await ann.exitChatroom(room)
            try await ben.exitChatroom(room)
            await ann.close()
            await ben.close()
        }
    }

    @Test("E8 X2: a client whose edge dies re-enters on the next address and resumes without duplicates or holes")
    func resumeOnAnotherNode() async throws {
        try await withLocalCluster { cluster in
            let app = "sdk-e2e", room = "sdk-resume"
            try await Self.setUp(cluster, app: app, room: room, accounts: ["ann", "ben"])
            var annConfig = ChatroomClient.Configuration.addresses([Self.address(cluster, 1)])
            annConfig.requestTimeout = .seconds(15)
            let ann = ChatroomClient(configuration: annConfig)
            var benConfig = ChatroomClient.Configuration.addresses([Self.address(cluster, 2), Self.address(cluster, 3)])
            benConfig.reconnectDelay = .seconds(1)
            let ben = ChatroomClient(configuration: benConfig)
            let annInbox = Inbox(ann), benInbox = Inbox(ben)
            try await ann.enterChatroom(ChatroomEnterRequest(roomId: room, auth: .independent(appKey: app, account: "ann", token: "tok-ann")))
            try await ben.enterChatroom(ChatroomEnterRequest(roomId: room, auth: .independent(appKey: app, account: "ben", token: "tok-ben"), retryCount: 10))
            for i in 0..<3 { try await ann.sendMessage(room, body: "before-\(i)") }
            try await cluster.eventually("ben sees 3") { await benInbox.messages(room).count >= 3 }
            cluster.kill9(2)
            try await cluster.eventually("ben lost its edge") { await benInbox.count(.loseConnection, room) >= 1 }
            // Sent while ben is away (retried: the room's shard may be electing a leader after the kill).
            for i in 0..<3 {
                try await cluster.eventually("send after-\(i)", seconds: 30) {
                    (try? await ann.sendMessage(room, body: "after-\(i)", clientMessageId: "after-\(i)")) != nil
                }
            }
            try await cluster.eventually("ben re-entered", seconds: 60) { await benInbox.count(.enterOK, room) >= 2 }
            try await cluster.eventually("ben sees all 6", seconds: 30) { await benInbox.messages(room).count >= 6 }
            // Ann's own messages reach her as events too, independently of her send's answer.
            try await cluster.eventually("ann sees all 6", seconds: 30) { await annInbox.messages(room).count >= 6 }
            let a = await annInbox.messages(room), b = await benInbox.messages(room)
            #expect(b.map(\.seq) == a.map(\.seq))
            #expect(b.map(\.body) == ["before-0", "before-1", "before-2", "after-0", "after-1", "after-2"])
            await ann.close()
            await ben.close()
        }
    }
}
