import Foundation
import ParleyClient
import Testing

/// Issue 38 item 6, seed 001 (NIM caps the teams a user is in): a user already in `maxTeamsPerUser` (500) teams
/// becomes a member of no other by any road — creating one, being added at once or invited, accepting an
/// invitation, applying to a free team, an application approved — through the server API or a client; the
/// refusal is 14206 and changes nothing. The count is read on the user's own shard before the team command runs
/// (the team's shard cannot see it). Real 3-node cluster.
@Suite(.serialized, .timeLimit(.minutes(4))) struct TeamCapTests {
    static let api = SignedAPIClient(appKey: "dev", secret: "dev-app-secret-0123456789", signsBody: true)
    static let cap = 500

    func post(_ cluster: LocalCluster, _ path: String, _ body: [String: Any], node: UInt64 = 1) async throws -> SignedAPIClient.Answer {
        try await Self.api.post(cluster.http(node), path, body)
    }

    func teams(_ cluster: LocalCluster, _ account: String) async throws -> [String] {
        try await post(cluster, "/v1/friend/get", ["accid": account], node: 2).data["teams"] as? [String] ?? []
    }

    func members(_ cluster: LocalCluster, _ tid: String) async throws -> [String] {
        let team = try await post(cluster, "/v1/team/query", ["tid": tid, "limit": 1]).data
        return (team["members"] as? [[String: Any]] ?? []).compactMap { $0["accid"] as? String }
    }

    @Test("001: a user in 500 teams joins no other — create, add, invite then accept, apply, approve; API and client; 14206 changes nothing")
    func aFullUserJoinsNoOtherTeamByAnyRoad() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.api.secret)"]) { cluster in
            try cluster.startAll()
            try await cluster.waitForSignedAPI(Self.api)
            for u in ["full", "owner"] {
                #expect(try await post(cluster, "/v1/user/create", ["accid": u, "token": "\(u)-token"]).status == 200)
            }
            // 499 teams of its own, 20 creates at a time.
            for batch in stride(from: 0, to: Self.cap - 1, by: 20) {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for i in batch..<min(batch + 20, Self.cap - 1) {
                        group.addTask {
                            try await post(cluster, "/v1/team/create", ["tid": "own-\(i)", "owner": "full", "tname": "Own"],
                                           node: UInt64(i % 3 + 1)).status
                        }
                    }
                    for try await status in group { #expect(status == 200) }
                }
            }
            // Teams the owner keeps: invitations wait for consent, applications for approval, one takes anyone.
            #expect(try await post(cluster, "/v1/team/create", ["tid": "gated", "owner": "owner", "tname": "G", "beinvitemode": 0]).status == 200)
            #expect(try await post(cluster, "/v1/team/create", ["tid": "approval", "owner": "owner", "tname": "A", "joinmode": 1]).status == 200)
            #expect(try await post(cluster, "/v1/team/create", ["tid": "open", "owner": "owner", "tname": "O", "beinvitemode": 1, "joinmode": 0]).status == 200)
            try await cluster.eventually("499 teams on the user's record", seconds: 30) {
                (try? await teams(cluster, "full").count) == Self.cap - 1
            }
            // Below the cap: an invitation and an application wait; the 500th team is made.
            #expect(try await post(cluster, "/v1/team/add", ["tid": "gated", "owner": "owner", "members": ["full"]]).status == 200)
            #expect(try await post(cluster, "/v1/team/apply", ["tid": "approval", "accid": "full"]).status == 200)
            #expect(try await post(cluster, "/v1/team/create", ["tid": "own-last", "owner": "full", "tname": "Own"]).status == 200)
            try await cluster.eventually("500 teams on the user's record", seconds: 30) {
                (try? await teams(cluster, "full").count) == Self.cap
            }

            // At the cap, every road is refused with 14206.
            let refusals: [(String, [String: Any])] = [
                ("/v1/team/create", ["tid": "one-more", "owner": "full", "tname": "X"]),
                ("/v1/team/add", ["tid": "open", "owner": "owner", "members": ["full"]]),
                ("/v1/team/acceptInvite", ["tid": "gated", "accid": "full"]),
                ("/v1/team/apply", ["tid": "open", "accid": "full"]),
                ("/v1/team/passApply", ["tid": "approval", "owner": "owner", "applicant": "full"]),
            ]
            for (path, body) in refusals {
                let answer = try await post(cluster, path, body, node: 3)
                #expect(answer.code == 14206, "\(path): \(answer.json)")
            }
            let client = IMClient(configuration: .addresses([cluster.clientAddress(2)]))
            try await client.login(appKey: "dev", account: "full", token: "full-token")
            do {
                try await client.createTeam("from-client", name: "C")
                Issue.record("a client's create at the cap was taken")
            } catch let error as ChatroomError {
                #expect(error.code == 14206, "\(error)")
            }
            do {
                try await client.addUsers(["owner"], toTeam: "never")  // not a join of this user: another code
            } catch let error as ChatroomError {
                #expect(error.code != 14206, "\(error)")
            }
            // Nothing changed: no team has the user, the record still holds 500, the refused team does not exist.
            for tid in ["gated", "approval", "open"] { #expect(try await !members(cluster, tid).contains("full"), "\(tid)") }
            #expect(try await teams(cluster, "full").count == Self.cap)
            #expect(try await post(cluster, "/v1/team/query", ["tid": "one-more", "limit": 1]).code != 200)

            // One team fewer: the invitation waiting since before can be accepted.
            #expect(try await post(cluster, "/v1/team/remove", ["tid": "own-0", "owner": "full"]).status == 200)
            try await cluster.eventually("499 teams again", seconds: 30) {
                (try? await teams(cluster, "full").count) == Self.cap - 1
            }
            #expect(try await post(cluster, "/v1/team/acceptInvite", ["tid": "gated", "accid": "full"]).status == 200)
            #expect(try await members(cluster, "gated").contains("full"))
            await client.logout()
        }
    }
}
