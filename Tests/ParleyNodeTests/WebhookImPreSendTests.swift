import Foundation
import ParleyClient
import ParleyNode
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// SPEC W3 for one-to-one and team messages (`preSend.im`) on three real `parley node` processes and the
/// verifying receiver (`cluster/webhooks/receiver.py`): a client's IM message is posted to the app server,
/// signed, before it is stored — rejected, the sender gets 14218 and no log holds it; replaced, the
/// replacement is stored; with the app's `onFailure: refuse`, an error status gets 14219 and nothing is stored.
@Suite(.serialized, .timeLimit(.minutes(5))) struct WebhookImPreSendTests {
    typealias Hooks = WebhookPreSendTests

    @Test func W3_imMessagesAreShownToTheAppServerBeforeTheyAreStored() async throws {
        let (receiver, port) = try await Hooks.listeningReceiver()
        defer {
            kill(receiver.processIdentifier, SIGKILL)
            receiver.waitUntilExit()
        }
        let api = Hooks.api
        try await withLocalCluster(extraArguments: ["--app", "hooks:\(api.secret)", "--webhook-allow", "127.0.0.1"]) { cluster in
            try cluster.startAll()
            try await cluster.waitForSignedAPI(api)
            let http = cluster.http(1)
            for user in ["ann", "bob"] {
                #expect(try await api.post(http, "/v1/user/create", ["accid": user, "token": "\(user)-token"]).status == 200)
            }
            func setWebhooks(onFailure: String) async throws {
                let set = try await api.post(http, "/v1/app/setWebhooks", [
                    "url": "http://127.0.0.1:\(port)/parley", "preSend": ["im": true], "timeoutMillis": 1_000,
                    "onFailure": onFailure,
                ])
                #expect(set.status == 200, "\(set.json)")
                let read = try await api.post(http, "/v1/app/getWebhooks", [:])
                let hooks = read.data["webhooks"] as? [String: Any]
                #expect((hooks?["preSend"] as? [String: Any])?["im"] as? Bool == true, "\(read.json)")
            }
            // The probes below are many quick messages to one user: lift the app's budgets (A1) out of their way.
            let lifted: [String: Any] = ["userMessagesPerSecond": 1_000_000, "userBurst": 1_000_000,
                                         "roomMessagesPerSecond": 1_000_000, "roomBurst": 1_000_000]
            #expect(try await api.post(http, "/v1/app/setBudgets", lifted).status == 200)
            try await setWebhooks(onFailure: "allow")
            var configuration = IMClient.Configuration.addresses([cluster.clientAddress(cluster.ids[1])])
            configuration.requestTimeout = .seconds(6)
            let ann = IMClient(configuration: configuration)
            defer { Task { await ann.logout() } }
            _ = try await ann.login(appKey: api.appKey, account: "ann", token: "ann-token")
            try await ann.createTeam("crew", name: "Crew")
            func send(_ to: IMSession, _ body: String) async -> Int {
                do { _ = try await ann.sendMessage(to: to, body: body); return 200 } catch let e as ChatroomError { return e.code } catch { return -1 }
            }
            func bodies(_ items: [[String: Any]]) -> [String] {
                items.compactMap { ($0["body"] as? String) ?? (($0["message"] as? [String: Any])?["body"] as? String) }
            }
            func bobsLog() async throws -> [String] {
                let answer = try await api.post(http, "/v1/msg/sync", ["accid": "bob", "afterSeq": 0, "limit": 500])
                return bodies(answer.data["items"] as? [[String: Any]] ?? [])
            }
            func teamLog() async throws -> [String] {
                let answer = try await api.post(http, "/v1/team/query", ["tid": "crew", "limit": 500])
                return bodies(answer.data["items"] as? [[String: Any]] ?? [])
            }
            // The nodes read the app's webhooks within a few seconds: until the first replaced probe, messages
            // go unchecked.
            var probes = 0
            try await cluster.eventually("the leader to check one-to-one messages", seconds: 20) {
                probes += 1
                _ = await send(.p2p("bob"), "[replace] probe \(probes)")
                return (try? await bobsLog().contains("[replaced] probe \(probes)")) == true
            }
            #expect(await send(.p2p("bob"), "hello bob") == 200)
            #expect(await send(.p2p("bob"), "[reject] spam") == 14218)
            #expect(await send(.p2p("bob"), "[replace] word") == 200)
            #expect(await send(.p2p("bob"), "[malformed] let through") == 200)  // the policy is allow
            let log = try await bobsLog()
            #expect(log.contains("hello bob") && log.contains("[replaced] word") && log.contains("[malformed] let through"), "\(log)")
            #expect(!log.contains("[reject] spam") && !log.contains("[replace] word"), "\(log)")

            #expect(await send(.team("crew"), "hello crew") == 200)
            #expect(await send(.team("crew"), "[reject] team spam") == 14218)
            #expect(await send(.team("crew"), "[replace] team word") == 200)
            let team = try await teamLog()
            #expect(team.contains("hello crew") && team.contains("[replaced] team word"), "\(team)")
            #expect(!team.contains("[reject] team spam") && !team.contains("[replace] team word"), "\(team)")

            // What the app server saw: signed calls of type preSendIm, ids as the app knows them.
            let received = try await Hooks.calls(port: port).compactMap { $0["verified"] as? Bool == true ? $0["call"] as? [String: Any] : nil }
            let p2p = received.first { $0["body"] as? String == "hello bob" }
            #expect(p2p?["type"] as? String == "preSendIm" && p2p?["conversation"] as? String == "p2p"
                    && p2p?["to"] as? String == "bob" && p2p?["from"] as? String == "ann", "\(p2p ?? [:])")
            let toTeam = received.first { $0["body"] as? String == "hello crew" }
            #expect(toTeam?["conversation"] as? String == "team" && toTeam?["teamId"] as? String == "crew", "\(toTeam ?? [:])")

            // Fail closed: nothing unchecked is stored.
            try await setWebhooks(onFailure: "refuse")
            // The policy reaches each node through the meta group: the leaders of bob's shard and of the team's
            // may sit on different nodes, so both roads are probed.
            try await cluster.eventually("the refuse policy to apply", seconds: 20) {
                let p2p = await send(.p2p("bob"), "[500] probe"), team = await send(.team("crew"), "[500] probe")
                return p2p == 14219 && team == 14219
            }
            #expect(await send(.p2p("bob"), "[500] closed") == 14219)
            #expect(await send(.team("crew"), "[500] closed") == 14219)
            #expect(await send(.p2p("bob"), "fine") == 200)
            let after = try await bobsLog()
            #expect(after.contains("fine") && !after.contains("[500] closed"), "\(after)")
            #expect(!(try await teamLog()).contains("[500] closed"))
        }
    }
}
