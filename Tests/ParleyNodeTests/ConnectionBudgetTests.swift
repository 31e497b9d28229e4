import Foundation
import ParleyClient
import ParleyRooms
import Testing
import ParleyPlacement

/// SPEC A1 (issue 35 item 4) on three real `parley node` processes: a connection's request budget is its app's,
/// set through the server API. With the message budgets lifted, 300 sends at once on one WebSocket meet the
/// node's default connection budget (bursts of 200); once the app lifts its connection budget the same flood
/// goes through whole, on a connection opened before the change too; reset, the default holds again.
@Suite(.serialized, .timeLimit(.minutes(4))) struct ConnectionBudgetTests {
    static let appKey = "budget-app"
    static let secret = "budget-app-secret-0123456789"
    let api = SignedAPIClient(appKey: ConnectionBudgetTests.appKey, secret: ConnectionBudgetTests.secret, signsBody: false)

    /// Sends `count` messages at once and counts the answers by code (200 for a success), with the time taken.
    static func flood(_ client: ChatroomClient, room: String, count: Int, tag: String) async -> ([Int: Int], Duration) {
        let began = ContinuousClock.now
        let answers = await BudgetRoadsTests.flood(count: count) { i in _ = try await client.sendMessage(room, body: "\(tag)-\(i)") }
        return (answers, ContinuousClock.now - began)
    }

    /// What the node's default connection budget (100 a second, bursts of 200) lets through in `took`, from a
    /// full bucket, with a token of slack.
    static func defaultAllows(over took: Duration) -> Int {
        200 + Int((100 * (Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)).rounded(.up)) + 1
    }

    /// The flood met the default budget: every answer a success or a 416, no more successes than it allows.
    static func heldToTheDefault(_ answers: [Int: Int], _ took: Duration, count: Int) -> Bool {
        let accepted = answers[200, default: 0]
        return accepted + answers[ChatroomError.rateLimited, default: 0] == count
            && accepted <= defaultAllows(over: took) && (accepted < count || defaultAllows(over: took) >= count)
    }

    @Test("A1: an app's connection budget set through /v1/app/setBudgets reaches open connections on every edge")
    func anAppsConnectionBudgetReachesOpenConnections() async throws {
        try await withLocalCluster(extraArguments: ["--app", "\(Self.appKey):\(Self.secret)"]) { cluster in
            try cluster.startAll()
            try await cluster.allowNimCheckSum(api)
            let http = cluster.http(cluster.ids[0])
            #expect(try await api.post(http, "/v1/user/create", ["accid": "bot", "token": "tok-bot"]).status == 200)
            #expect(try await api.post(http, "/v1/room/create", ["roomId": "feed", "creator": "bot", "name": "Feed"]).status == 200)
            let lifted: [String: Any] = ["userMessagesPerSecond": 1_000_000, "userBurst": 1_000_000,
                                         "roomMessagesPerSecond": 1_000_000, "roomBurst": 1_000_000]
            #expect(try await api.post(http, "/v1/app/setBudgets", lifted).status == 200)
            var configuration = ChatroomClient.Configuration.addresses([cluster.clientAddress(cluster.ids[1])])
            configuration.requestTimeout = .seconds(30)
            let bot = ChatroomClient(configuration: configuration)
            try await bot.enterChatroom(ChatroomEnterRequest(
                roomId: "feed", auth: .independent(appKey: Self.appKey, account: "bot", token: "tok-bot"), nickname: "Bot"))
            // The node's default: a burst of 200, 100 a second after it.
            let (held, heldTook) = await Self.flood(bot, room: "feed", count: 600, tag: "a")
            #expect(Self.heldToTheDefault(held, heldTook, count: 600), "default budget: \(held) in \(heldTook)")
            // Lifted for the app, through another node: the open connection follows within about a second.
            var withConnection = lifted
            withConnection["connectionRequestsPerSecond"] = 1_000_000
            withConnection["connectionBurst"] = 1_000_000
            #expect(try await api.post(cluster.http(cluster.ids[2]), "/v1/app/setBudgets", withConnection).status == 200)
            var lastFlood: [Int: Int] = [:]
            for attempt in 0..<10 {
                try await Task.sleep(for: .milliseconds(1_500))
                lastFlood = await Self.flood(bot, room: "feed", count: 600, tag: "b\(attempt)").0
                if lastFlood == [200: 600] { break }
            }
            #expect(lastFlood == [200: 600], "lifted budget: \(lastFlood)")
            // Reset (fields left out: the defaults): held again once the edge read it (a first request has it
            // read; the bucket then refills to its burst).
            #expect(try await api.post(http, "/v1/app/setBudgets", lifted).status == 200)
            try await Task.sleep(for: .milliseconds(1_500))
            _ = await Self.flood(bot, room: "feed", count: 1, tag: "probe")
            try await Task.sleep(for: .milliseconds(2_500))
            let (again, againTook) = await Self.flood(bot, room: "feed", count: 600, tag: "c")
            #expect(Self.heldToTheDefault(again, againTook, count: 600), "reset budget: \(again) in \(againTook)")
            await bot.close()
        }
    }
}
