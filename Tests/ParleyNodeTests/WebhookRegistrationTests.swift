import Foundation
import Testing

/// SPEC W1 on three real `parley node` processes: an app sets its webhooks through one node and every node
/// reads them back; bad settings and targets the operator did not allow are refused (10414) and change
/// nothing; removing them leaves none. The nodes allow 127.0.0.1 as a target (`--webhook-allow`), nothing else
/// that is not public.
@Suite(.serialized, .timeLimit(.minutes(4))) struct WebhookRegistrationTests {
    static let api = SignedAPIClient(appKey: "hooks", secret: "hooks-app-secret-0123456789", signsBody: true)
    static let other = SignedAPIClient(appKey: "other", secret: "other-app-secret-0123456789", signsBody: true)

    @Test func W1_webhooksAreSetReadOnEveryNodeRefusedWhenBadAndRemoved() async throws {
        try await withLocalCluster(extraArguments: ["--app", "hooks:\(Self.api.secret)", "--app", "other:\(Self.other.secret)",
                                                    "--webhook-allow", "127.0.0.1"]) { cluster in
            try cluster.startAll()
            try await cluster.waitForSignedAPI(Self.api)
            try await cluster.waitForSignedAPI(Self.other)
            func get(_ node: UInt64, as client: SignedAPIClient = Self.api) async throws -> [String: Any]? {
                let answer = try await client.post(cluster.http(node), "/v1/app/getWebhooks", [:] as [String: Any])
                #expect(answer.status == 200, "\(answer.json)")
                return answer.data["webhooks"] as? [String: Any]
            }
            #expect(try await get(1) == nil)
            let settings: [String: Any] = [
                "url": "http://127.0.0.1:9/parley", "events": ["room.message", "room.enter", "im.p2p"],
                "preSend": ["rooms": ["lobby", "stage"]], "timeoutMillis": 1_500, "onFailure": "refuse",
            ]
            let set = try await Self.api.post(cluster.http(1), "/v1/app/setWebhooks", settings)
            #expect(set.status == 200, "\(set.json)")
            // Every node reads them from the meta group (its replica or a fetched copy).
            for node in cluster.ids {
                try await cluster.eventually("node \(node) to read the webhooks") {
                    guard let w = try? await get(node) else { return false }
                    return w["url"] as? String == "http://127.0.0.1:9/parley"
                        && w["events"] as? [String] == ["im.p2p", "room.enter", "room.message"]
                        && (w["preSend"] as? [String: Any])?["rooms"] as? [String] == ["lobby", "stage"]
                        && (w["preSend"] as? [String: Any])?["im"] as? Bool == false
                        && w["timeoutMillis"] as? Int == 1_500 && w["onFailure"] as? String == "refuse"
                        && w["enabled"] as? Bool == true
                }
            }
            // Another app sees only its own.
            #expect(try await get(2, as: Self.other) == nil)
            // Refused, each with 10414, and nothing changes.
            let refused: [[String: Any]] = [
                ["url": "http://169.254.169.254/latest/meta-data"],  // link-local: not allowed here
                ["url": "http://10.0.0.7/"],                         // private
                ["url": "http://localhost:9/"],                      // this machine by name, not allowed
                ["url": "ftp://hooks.example.com/"],
                ["url": "https://hooks.example.com/", "events": ["room.teleport"]],
                ["url": "https://hooks.example.com/", "timeoutMillis": 9_000],
                ["url": "https://hooks.example.com/", "onFailure": "maybe"],
                ["url": "https://hooks.example.com/", "preSend": ["rooms": "some"]],
                ["url": "https://hooks.example.com/", "preSend": ["rooms": [] as [String]]],
                ["events": ["room.message"]],
                ["url": "https://hooks.example.com/", "preSend": ["rooms": "all", "im": "yes"]],
            ]
            for body in refused {
                let answer = try await Self.api.post(cluster.http(2), "/v1/app/setWebhooks", body)
                #expect(answer.status == 400 && [10414, 10400].contains(answer.code ?? 0), "\(body): \(answer.json)")
            }
            #expect(try await get(3)?["url"] as? String == "http://127.0.0.1:9/parley")
            // Off keeps the settings; "all" rooms reads back as "all".
            let off = try await Self.api.post(cluster.http(3), "/v1/app/setWebhooks",
                                              ["url": "https://hooks.example.com/x", "enabled": false, "preSend": ["rooms": "all"]])
            #expect(off.status == 200, "\(off.json)")
            let offRead = try #require(try await get(3))
            #expect(offRead["enabled"] as? Bool == false && (offRead["preSend"] as? [String: Any])?["rooms"] as? String == "all")
            let removed = try await Self.api.post(cluster.http(1), "/v1/app/removeWebhooks", [:] as [String: Any])
            #expect(removed.status == 200 && removed.data["webhooks"] == nil, "\(removed.json)")
            for node in cluster.ids {
                try await cluster.eventually("node \(node) to see none") {
                    do { return try await get(node) == nil } catch { return false }
                }
            }
            // Removing none again changes nothing and answers alike.
            #expect(try await Self.api.post(cluster.http(2), "/v1/app/removeWebhooks", [:] as [String: Any]).status == 200)
        }
    }
}
