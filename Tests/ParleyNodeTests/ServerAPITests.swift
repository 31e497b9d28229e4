import Foundation
import ParleyNode
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ParleyAPI
import ParleyClient
import ParleyCluster
import ParleyRooms
import ParleyPlacement

/// The server API over real HTTP on three real `parley node` processes: each request goes to a different
/// node, which forwards to the shard or meta leader. Every refusal is checked for its documented code and
/// for changing nothing (the state is read back afterwards).
@Suite(.serialized, .timeLimit(.minutes(4))) struct ServerAPITests {
    static let appKey = "it-app"
    static let secret = "it-app-secret-0123456789"
    /// NIM's CheckSum: these tests check the NIM-compatible signing an app may choose (SPEC T2).
    let api = SignedAPIClient(appKey: ServerAPITests.appKey, secret: ServerAPITests.secret, signsBody: false)

    private func withAPICluster(_ body: (LocalCluster) async throws -> Void) async throws {
        try await withLocalCluster(extraArguments: ["--app", "\(Self.appKey):\(Self.secret)"]) { cluster in
            try cluster.startAll()
            try await cluster.allowNimCheckSum(api)
            try await body(cluster)
        }
    }

    private func expectRefusal(_ a: SignedAPIClient.Answer, _ status: Int, _ code: Int,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(a.status == status && a.code == code, "got \(a.status) \(a.json)", sourceLocation: sourceLocation)
        #expect(a.json["desc"] is String, sourceLocation: sourceLocation)
    }

    private func room(_ a: SignedAPIClient.Answer) -> [String: Any] { a.data["room"] as? [String: Any] ?? [:] }

    /// SPEC A7 (issue 22): a signed write captured off the wire and sent again byte for byte — to every other
    /// node and to the same node, within the window — is applied once by the whole cluster: each kind (send,
    /// kick, temp mute, queue offer, user create, token refresh) is answered 10406 on every replay and every
    /// replica's state is what the first request left; the same after the room's shard leader was killed and
    /// restarted (a new leader, a node that restarted from its own log and snapshot).
    @Test func A7_aSignedWriteReplayedToAnyNodeIsAppliedOnce() async throws {
        try await withAPICluster { cluster in
            let base = cluster.http(1)
            for user in ["ann", "bob"] {
                #expect(try await api.post(base, "/v1/user/create", ["accid": user, "token": "tok-\(user)"]).status == 200)
            }
            #expect(try await api.post(base, "/v1/room/create", ["roomId": "r22", "creator": "ann", "name": "R"]).status == 200)
            #expect(try await api.post(base, "/v1/queue/init", ["roomId": "r22", "maxSize": 100]).status == 200)
            let bob = ChatroomClient(configuration: .addresses([cluster.clientAddress(2)]))
            _ = try await bob.enterChatroom(ChatroomEnterRequest(
                roomId: "r22", auth: .independent(appKey: Self.appKey, account: "bob", token: "tok-bob"), nickname: "Bob"))
            // The captured requests: NIM's CheckSum headers (what an old SDK sends) and the exact body.
            var captured: [(path: String, body: Data, headers: [String: String?])] = []
            func capture(_ path: String, _ fields: [String: Any]) async throws {
                let body = try JSONSerialization.data(withJSONObject: fields)
                let headers = RequestSignature.headers(appKey: Self.appKey, secret: Self.secret, nonce: UUID().uuidString,
                                                       curTime: Int64(Date().timeIntervalSince1970)).mapValues { Optional($0) }
                let first = try await api.post(base, path, [:], headers: headers, rawBody: body)
                #expect(first.status == 200, "\(path): \(first.json)")
                captured.append((path, body, headers))
            }
            try await capture("/v1/message/send", ["roomId": "r22", "type": "text", "body": "once", "fromAccid": "ann"])
            try await capture("/v1/member/tempMute", ["roomId": "r22", "accid": "bob", "seconds": 60])
            try await capture("/v1/queue/offer", ["roomId": "r22", "key": "seat-1", "value": "ann"])
            try await capture("/v1/member/kick", ["roomId": "r22", "accid": "bob"])
            try await capture("/v1/user/create", ["accid": "carl", "token": "tok-carl"])
            try await capture("/v1/user/refreshToken", ["accid": "ann"])
            await bob.close()
            func state() async throws -> ([UInt64: [Int: String]], [MetaState]) {
                // The digests and the applied indexes of one report each: entries applied between two reports
                // would make a lagging replica's digest differ. The shards' window bound (SPEC D1), which their
                // leaders set by themselves once every node reads it, is set first.
                var digests: [UInt64: [Int: String]] = [:]
                try await cluster.eventually("every replica to apply the same entries", seconds: 20) {
                    let all = await cluster.statuses(digests: true)
                    guard all.count == cluster.ids.count,
                          all.values.allSatisfy({ $0.memory?.shardsWithWindowBound == $0.shards.count }) else { return false }
                    let applied = all.values.map { s in s.shards.map { "\($0.shard):\($0.applied)" }.sorted() }
                    guard Set(applied).count == 1 else { return false }
                    digests = all.mapValues { s in Dictionary(uniqueKeysWithValues: s.shards.map { ($0.shard, $0.digest ?? "") }) }
                    return true
                }
                var metas: [MetaState] = []
                for id in cluster.ids { metas.append(try await cluster.metaState(via: id)) }
                return (digests, metas)
            }
            func replayEverywhere(_ when: String) async throws {
                let before = try await state()
                for request in captured {
                    for id in cluster.ids {
                        let again = try await api.post(cluster.http(id), request.path, [:], headers: request.headers,
                                                       rawBody: request.body)
                        #expect(again.code == 10406, "\(when): \(request.path) replayed to node \(id): \(again.status) \(again.json)")
                    }
                }
                let after = try await state()
                #expect(after.0 == before.0, "\(when): a replica's rooms changed")
                #expect(after.1 == before.1 && Set(after.1.map { $0.snapshot() }).count == 1, "\(when): the meta state changed")
            }
            try await replayEverywhere("right after")
            let shard = ShardMap(shardCount: 16).shard(ofRoom: AppScope.scoped("r22", in: Self.appKey))
            let leader = try #require(await cluster.leader(ofShard: shard))
            cluster.kill9(leader)
            try await cluster.eventually("a new leader of the room's shard", seconds: 20) {
                await cluster.leader(ofShard: shard).map { $0 != leader } ?? false
            }
            try cluster.start(leader)
            try await cluster.eventually("the restarted node to answer the API", seconds: 30) {
                (try? await api.post(cluster.http(leader), "/v1/room/get", ["roomId": "r22"]).status) == 200
            }
            try await replayEverywhere("after the leader was killed and restarted")
            // The refreshed token is the one the first refresh answered, still: ann logs in with it only.
            let history = try await api.post(base, "/v1/message/history", ["roomId": "r22", "limit": 100])
            let bodies = (history.data["items"] as? [[String: Any]] ?? []).compactMap { $0["body"] as? String }
            #expect(bodies.filter { $0 == "once" }.count == 1, "\(bodies)")
        }
    }

    /// Issue 24: neither the app secret nor a user's token is kept in clear: not in `meta/state` as it crosses
    /// the peer port on any node, not in any file of any data folder (SQLite, its WAL), while the token
    /// still logs in (the edge checks it against the stored digest) and a wrong one does not.
    @Test func secretsAndTokensAreNeitherServedNorStoredInClear() async throws {
        try await withAPICluster { cluster in
            let token = "erin-CLEARTOKEN-0123456789"
            #expect(try await api.post(cluster.http(2), "/v1/user/create", ["accid": "erin", "token": token]).status == 200)
            let made = try await api.post(cluster.http(3), "/v1/user/create", ["accid": "fred"])
            let generated = try #require(made.data["token"] as? String)
            #expect(try await api.post(cluster.http(1), "/v1/user/create", ["accid": "gus", "token": String(repeating: "t", count: 257)]).code == 10414)
            func holds(_ bytes: [UInt8], _ text: String) -> Bool { Data(bytes).range(of: Data(text.utf8)) != nil }
            for id in cluster.ids {
                let served = try await cluster.metaStateBytes(via: id)
                #expect(holds(served, "erin"), "node \(id): the search finds what is there")
                for clear in [token, generated, Self.secret] { #expect(!holds(served, clear), "node \(id) served \(clear)") }
            }
            try await cluster.eventually("the users to reach every replica's files", seconds: 10) {
                var found = 0
                for id in cluster.ids {
                    let folder = cluster.nodes.layout.dataDirectory + "/node-\(id)"
                    for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                        let bytes = Array((try? Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))) ?? Data())
                        if holds(bytes, "fred") { found += 1 }
                        for clear in [token, generated, Self.secret] { #expect(!holds(bytes, clear), "\(folder)/\(name) holds \(clear)") }
                    }
                }
                return found >= 3
            }
            #expect(try await api.post(cluster.http(1), "/v1/room/create", ["roomId": "vault", "creator": "erin", "name": "V"]).status == 200)
            let wrong = ChatroomClient(configuration: .addresses([cluster.clientAddress(1)]))
            await #expect(throws: ChatroomError.self) {
                try await wrong.enterChatroom(ChatroomEnterRequest(
                    roomId: "vault", auth: .independent(appKey: Self.appKey, account: "erin", token: token + "x"), nickname: "E"))
            }
            await wrong.close()
            let erin = ChatroomClient(configuration: .addresses([cluster.clientAddress(1)]))
            let entered = try await erin.enterChatroom(ChatroomEnterRequest(
                roomId: "vault", auth: .independent(appKey: Self.appKey, account: "erin", token: token), nickname: "E"))
            #expect(entered.member.type == .creator)
            await erin.close()
        }
    }

    /// Issue 24: the headers of a request signed with CheckSum2, captured from node 1, cannot carry another
    /// call (another path or body) on any node; an app that requires CheckSum2 refuses NIM's CheckSum alone
    /// on every node; nothing of the refused calls changes the user.
    @Test func checkSum2HeadersCannotCarryAnotherCallOnAnyNodeAndAnAppCanRequireThem() async throws {
        try await withAPICluster { cluster in
            let signer = SignedAPIClient(appKey: Self.appKey, secret: Self.secret, signsBody: true)
            let made = try await signer.post(cluster.http(1), "/v1/user/create", ["accid": "carol", "token": "carol-token-1"])
            #expect(made.status == 200, "\(made.json)")
            // The captured request: a signed read of carol on node 1.
            let read = try JSONSerialization.data(withJSONObject: ["accid": "carol"])
            var captured = RequestSignature.signedHeaders(appKey: Self.appKey, secret: Self.secret, nonce: UUID().uuidString,
                                                          curTime: Int64(Date().timeIntervalSince1970),
                                                          path: "/v1/user/get", body: read).mapValues { Optional($0) }
            captured["CheckSum"] = .some(nil)  // exactly the captured headers: none of the test client's own
            #expect(try await api.post(cluster.http(1), "/v1/user/get", [:], headers: captured, rawBody: read).status == 200)
            // Replayed elsewhere with another path and body: the token refresh the attacker wants.
            for id in cluster.ids {
                expectRefusal(try await api.post(cluster.http(id), "/v1/user/refreshToken",
                                                 ["accid": "carol", "token": "stolen-token"], headers: captured), 401, 10403)
            }
            // Same path, another body (another account), on another node.
            expectRefusal(try await api.post(cluster.http(2), "/v1/user/get", ["accid": "dave"], headers: captured), 401, 10403)
            for id in cluster.ids {
                let user = try await cluster.metaState(via: id).user(appKey: Self.appKey, account: "carol")
                #expect(user?.tokenDigest == cluster.secrets.tokenDigest(appKey: Self.appKey, account: "carol", token: "carol-token-1"), "node \(id): carol's token must be unchanged")
            }

            // The app requires CheckSum2 from now on: NIM-signed requests are refused on every node (within the
            // second each node's keyring may take to see it), CheckSum2-signed ones still work.
            let set = try await signer.post(cluster.http(2), "/v1/app/setSigning", ["requireSignedBody": true])
            #expect(set.status == 200 && set.data["requireSignedBody"] as? Bool == true, "\(set.json)")
            for id in cluster.ids {
                try await cluster.eventually("node \(id) to refuse CheckSum alone", seconds: 10) {
                    let a = try? await api.post(cluster.http(id), "/v1/user/get", ["accid": "carol"])
                    return a?.status == 401 && a?.code == 10407
                }
                #expect(try await signer.post(cluster.http(id), "/v1/user/get", ["accid": "carol"]).status == 200)
            }
            // Back to NIM-compatible signing (itself a CheckSum2 request, since the app requires it).
            #expect(try await signer.post(cluster.http(3), "/v1/app/setSigning", ["requireSignedBody": false]).status == 200)
            try await cluster.eventually("node 1 to take CheckSum alone again", seconds: 10) {
                (try? await api.post(cluster.http(1), "/v1/user/get", ["accid": "carol"]))?.status == 200
            }
        }
    }

    /// SPEC T2 (issue 33): a new app requires CheckSum2 — NIM's CheckSum alone is refused (10407) on every node
    /// and changes nothing — until the app chooses it (`/v1/app/setSigning`).
    @Test func T2_aNewAppRequiresCheckSum2UntilItChoosesOtherwise() async throws {
        try await withLocalCluster(extraArguments: ["--app", "\(Self.appKey):\(Self.secret)"]) { cluster in
            try cluster.startAll()
            let signer = SignedAPIClient(appKey: Self.appKey, secret: Self.secret)
            try await cluster.waitForSignedAPI(signer)
            #expect(try await cluster.metaState(via: 2).apps[Self.appKey]?.requiresSignedBody == true)
            for id in cluster.ids {
                expectRefusal(try await api.post(cluster.http(id), "/v1/user/create", ["accid": "mallory", "token": "t"]), 401, 10407)
                #expect(try await cluster.metaState(via: id).user(appKey: Self.appKey, account: "mallory") == nil)
            }
            #expect(try await signer.post(cluster.http(3), "/v1/user/create", ["accid": "mallory", "token": "t"]).status == 200)
            // A CheckSum2-signed read is good for one answer on any node: unlike the clients' reads it keeps its
            // entry, whose request key the room's shard remembers (issue 34: reads otherwise leave the log).
            #expect(try await signer.post(cluster.http(1), "/v1/room/create", ["roomId": "r-t2", "creator": "mallory", "name": "T"]).status == 200)
            for (path, fields) in [("/v1/room/get", ["roomId": "r-t2"] as [String: Any]), ("/v1/message/history", ["roomId": "r-t2", "limit": 10])] {
                let body = try JSONSerialization.data(withJSONObject: fields)
                let headers = RequestSignature.signedHeaders(appKey: Self.appKey, secret: Self.secret, nonce: UUID().uuidString,
                                                             curTime: Int64(Date().timeIntervalSince1970), path: path, body: body)
                    .mapValues { Optional($0) }
                #expect(try await signer.post(cluster.http(1), path, [:], headers: headers, rawBody: body).status == 200)
                for id in cluster.ids.dropFirst() {
                    let again = try await signer.post(cluster.http(id), path, [:], headers: headers, rawBody: body)
                    #expect(again.code == 10406, "\(path) replayed to node \(id): \(again.status) \(again.json)")
                }
            }
        }
    }

    /// SPEC T2 (issue 33): for an app that chose NIM's CheckSum, one nonce carries one call in the whole cluster,
    /// whatever the call: the headers of a read on node 1 cannot carry a token refresh on nodes 2 and 3, and a
    /// request signed with both checksums cannot, stripped of its CheckSum2, carry another call elsewhere. The
    /// user's token is unchanged on every replica.
    @Test func T2_aNimSignedNonceCarriesOneCallInTheWholeCluster() async throws {
        try await withAPICluster { cluster in
            #expect(try await api.post(cluster.http(1), "/v1/user/create", ["accid": "alice", "token": "tok-1"]).status == 200)
            let read = try JSONSerialization.data(withJSONObject: ["roomId": "nowhere"])
            let steal: [String: Any] = ["accid": "alice", "token": "stolen"]
            // 1. A read's headers, captured on node 1, sent to the other nodes with another path and body.
            let captured = RequestSignature.headers(appKey: Self.appKey, secret: Self.secret, nonce: UUID().uuidString,
                                                    curTime: Int64(Date().timeIntervalSince1970)).mapValues { Optional($0) }
            #expect(try await api.post(cluster.http(1), "/v1/room/get", [:], headers: captured, rawBody: read).status == 404)
            for id: UInt64 in [2, 3] {
                expectRefusal(try await api.post(cluster.http(id), "/v1/user/refreshToken", steal, headers: captured), 403, 10406)
            }
            // 2. Both checksums, sent to node 2; stripped of CheckSum2 and sent to node 3 with another call.
            let nonce = UUID().uuidString, now = Int64(Date().timeIntervalSince1970)
            var both = RequestSignature.signedHeaders(appKey: Self.appKey, secret: Self.secret, nonce: nonce, curTime: now,
                                                      path: "/v1/room/get", body: read).mapValues { Optional($0) }
            both["CheckSum"] = RequestSignature.checkSum(secret: Self.secret, nonce: nonce, curTime: now)
            #expect(try await api.post(cluster.http(2), "/v1/room/get", [:], headers: both, rawBody: read).status == 404)
            var stripped = both
            stripped["CheckSum2"] = .some(nil)
            expectRefusal(try await api.post(cluster.http(3), "/v1/user/refreshToken", steal, headers: stripped), 403, 10406)
            for id in cluster.ids {
                let user = try await cluster.metaState(via: id).user(appKey: Self.appKey, account: "alice")
                #expect(user?.tokenDigest == cluster.secrets.tokenDigest(appKey: Self.appKey, account: "alice", token: "tok-1"),
                        "node \(id): alice's token must be unchanged")
            }
        }
    }

    @Test func signatureRefusalsHaveTheirCodesAndChangeNothing() async throws {
        try await withAPICluster { cluster in
            let base = cluster.http(1)
            let create: [String: Any] = ["roomId": "sig-room", "creator": "alice", "name": "Signed"]
            let now = Int64(Date().timeIntervalSince1970)
            func signed(_ key: String = Self.appKey, secret: String = Self.secret, nonce: String = UUID().uuidString,
                        time: Int64 = Int64(Date().timeIntervalSince1970)) -> [String: String?] {
                RequestSignature.headers(appKey: key, secret: secret, nonce: nonce, curTime: time).mapValues { $0 }
            }
            expectRefusal(try await api.post(base, "/v1/room/create", create, headers: ["CheckSum": nil]), 401, 10401)
            expectRefusal(try await api.post(base, "/v1/room/create", create, headers: ["CurTime": "soon"]), 401, 10401)
            expectRefusal(try await api.post(base, "/v1/room/create", create, headers: signed("nobody")), 401, 10402)
            expectRefusal(try await api.post(base, "/v1/room/create", create,
                                             headers: signed(secret: "not-the-secret-at-all")), 401, 10403)
            expectRefusal(try await api.post(base, "/v1/room/create", create,
                                             headers: ["CheckSum": String(repeating: "0", count: 40)]), 401, 10403)
            expectRefusal(try await api.post(base, "/v1/room/create", create, headers: signed(time: now - 301)), 403, 10405)
            expectRefusal(try await api.post(base, "/v1/room/create", create, headers: signed(time: now + 400)), 403, 10405)
            // A replay: the same signed headers twice on one node. The first is answered, the second refused.
            let once = signed(nonce: "replayed-nonce")
            #expect(try await api.post(base, "/v1/room/get", ["roomId": "sig-room"], headers: once).status == 404)
            expectRefusal(try await api.post(base, "/v1/room/create", create, headers: once), 403, 10406)
            // Issue 24: refused signatures are counted by code and logged (at most one line per 10 s).
            let (metricsText, _) = try await ToolHTTP.shared.data(from: URL(string: base + "/metrics")!)
            let scraped = PrometheusText(text: String(decoding: metricsText, as: UTF8.self))
            for (code, least) in [("10401", 2.0), ("10402", 1.0), ("10403", 2.0), ("10405", 2.0), ("10406", 1.0)] {
                #expect((scraped.value("parley_api_auth_failures_total", ["code": code]) ?? 0) >= least, "code \(code)")
            }
            let log = try String(contentsOf: cluster.directory.appendingPathComponent("node-1.log"), encoding: .utf8)
            #expect(log.contains("refused server-API signatures"))
            // Nothing of the above created the room; a correctly signed request still works afterwards.
            for id in cluster.ids {
                expectRefusal(try await api.post(cluster.http(id), "/v1/room/get", ["roomId": "sig-room"]), 404, 404)
            }
            #expect(try await api.post(base, "/v1/room/create", create).status == 200)
        }
    }

    @Test func usersRoomsAndBadInputThroughEveryNode() async throws {
        try await withAPICluster { cluster in
            let n = cluster.ids.map { cluster.http($0) }
            // Users and tokens (E4, E5).
            let alice = try await api.post(n[0], "/v1/user/create", ["accid": "alice", "name": "Alice"])
            let token = try #require(alice.data["token"] as? String)
            #expect(alice.status == 200 && token.count == 32)
            expectRefusal(try await api.post(n[1], "/v1/user/create", ["accid": "alice"]), 409, 10409)
            expectRefusal(try await api.post(n[1], "/v1/user/create", ["accid": String(repeating: "a", count: 200)]), 400, 10414)
            expectRefusal(try await api.post(n[1], "/v1/user/create", ["accid": 7]), 400, 10400)
            expectRefusal(try await api.post(n[2], "/v1/user/get", ["accid": "nobody"]), 404, 10404)
            let refreshed = try await api.post(n[2], "/v1/user/refreshToken", ["accid": "alice"])
            #expect(refreshed.status == 200 && refreshed.data["token"] as? String != token)
            #expect(try await api.post(n[0], "/v1/user/revokeToken", ["accid": "alice"]).status == 200)
            #expect(try await api.post(n[1], "/v1/user/get", ["accid": "alice"]).data["revoked"] as? Bool == true)
            #expect(try await api.post(n[2], "/v1/user/refreshToken", ["accid": "alice", "token": "chosen"]).data["token"] as? String == "chosen")
            let user = try await api.post(n[0], "/v1/user/get", ["accid": "alice"]).data
            #expect(user["revoked"] as? Bool == false && user["name"] as? String == "Alice" && user["token"] == nil)

            // Rooms (R1, R2, R4, N4, E6, E7).
            let created = try await api.post(n[1], "/v1/room/create", ["roomId": "r1", "creator": "alice", "name": "One",
                                                                       "queueLevel": "managers"])
            #expect(created.status == 200 && room(created)["queueLevel"] as? String == "managers")
            expectRefusal(try await api.post(n[2], "/v1/room/create", ["roomId": "r1", "creator": "alice", "name": "Again"]), 409, 417)
            // Issue 33: a new room's id reads as what it is — no controls, no invisible formatting, composed.
            for bad in ["r\u{7}bell", "\u{202E}lave", "a\u{200B}b", "e\u{301}te"] {
                expectRefusal(try await api.post(n[0], "/v1/room/create", ["roomId": bad, "creator": "alice", "name": "Bad"]),
                              400, 10414)
                expectRefusal(try await api.post(n[0], "/v1/room/get", ["roomId": bad]), 404, 404)
            }
            #expect(try await api.post(n[0], "/v1/room/create", ["roomId": "\u{e9}t\u{e9}", "creator": "alice", "name": "NFC"]).status == 200)
            let generated = try await api.post(n[2], "/v1/room/create", ["creator": "alice", "name": "Generated"])
            let genId = try #require(room(generated)["roomId"] as? String)
            #expect(!genId.isEmpty)
            let batch = try await api.post(n[0], "/v1/room/getBatch", ["roomIds": ["r1", genId, "missing"]])
            #expect((batch.data["rooms"] as? [[String: Any]])?.compactMap { $0["roomId"] as? String } == ["r1", genId])
            #expect((batch.data["rooms"] as? [[String: Any]])?.allSatisfy { $0["onlineUserCount"] as? Int == 0 } == true)
            #expect(batch.data["missing"] as? [String] == ["missing"])
            expectRefusal(try await api.post(n[0], "/v1/room/getBatch", ["roomIds": (0...20).map { "r\($0)" }]), 400, 10414)
            let updated = try await api.post(n[1], "/v1/room/update", ["roomId": "r1", "name": "Renamed", "needNotify": true,
                                                                       "notifyExt": "why"])
            #expect(room(updated)["name"] as? String == "Renamed")
            expectRefusal(try await api.post(n[2], "/v1/room/update", ["roomId": "r1", "name": String(repeating: "n", count: 300)]), 400, 414)
            expectRefusal(try await api.post(n[2], "/v1/room/update", ["roomId": "r1", "queueLevel": "everyone"]), 400, 10414)
            expectRefusal(try await api.post(n[2], "/v1/room/get", ["roomId": 5]), 400, 10400)
            expectRefusal(try await api.post(n[2], "/v1/room/get", [:], rawBody: Data("not json".utf8)), 400, 10400)
            expectRefusal(try await api.post(n[2], "/v1/room/get", ["roomId": String(repeating: "r", count: 129)]), 400, 10414)
            expectRefusal(try await api.post(n[2], "/v1/room/get", ["roomId": "nope"]), 404, 404)
            expectRefusal(try await api.post(n[2], "/v1/room/update",
                                             ["roomId": "r1", "ext": String(repeating: "x", count: 300_000)]), 413, 10413)
            let r1 = room(try await api.post(n[0], "/v1/room/get", ["roomId": "r1"]))
            #expect(r1["name"] as? String == "Renamed" && r1["queueLevel"] as? String == "managers" && r1["ext"] as? String == "")

            let closed = try await api.post(n[0], "/v1/room/toggleClose", ["roomId": "r1", "valid": false, "ext": "bye"])
            #expect(room(closed)["valid"] as? Bool == false)
            expectRefusal(try await api.post(n[1], "/v1/message/send", ["roomId": "r1", "type": "text", "body": "x"]), 409, 13002)
            expectRefusal(try await api.post(n[1], "/v1/room/requestAddr", ["roomId": "r1", "accid": "alice"]), 409, 13002)
            expectRefusal(try await api.post(n[1], "/v1/room/toggleClose", ["roomId": "r1", "valid": false]), 409, 13002)
            #expect(room(try await api.post(n[2], "/v1/room/toggleClose", ["roomId": "r1", "valid": true]))["valid"] as? Bool == true)
            let addr = try await api.post(n[1], "/v1/room/requestAddr", ["roomId": "r1", "accid": "alice", "clientType": "web"])
            let edges = try #require(addr.data["addr"] as? [String])
            #expect(Set(edges) == Set(n.map { $0.replacingOccurrences(of: "http://", with: "") }) && edges.count == 3)
            // E6: rendezvous order over the live edges, the same whichever node answers.
            for node in n {
                let other = try await api.post(node, "/v1/room/requestAddr", ["roomId": "r1", "accid": "alice"])
                #expect(other.data["addr"] as? [String] == edges)
            }
            expectRefusal(try await api.post(n[1], "/v1/room/requestAddr", ["roomId": "nope", "accid": "alice"]), 404, 404)

            let policy = try await api.post(n[2], "/v1/room/setPolicy", ["roomId": "r1", "enterExitNotifications": false,
                                                                         "devicePolicy": "single"])
            #expect(room(policy)["enterExitNotifications"] as? Bool == false && room(policy)["devicePolicy"] as? String == "single")
            expectRefusal(try await api.post(n[2], "/v1/room/setPolicy", ["roomId": "r1", "devicePolicy": "many"]), 400, 10414)
            #expect(room(try await api.post(n[0], "/v1/room/get", ["roomId": "r1"]))["devicePolicy"] as? String == "single")
            #expect(try await api.post(n[0], "/v1/app/setPolicy", ["enterExitNotifications": true]).data["shards"] as? Int == cluster.shards)
            // A1 (issue 35): the app's connection request budget goes to the meta group; a bad one is refused
            // and changes nothing; a call without it puts the node's default back (fields left out: defaults).
            let bot = ConnectionBudget(requestsPerSecond: 5_000, burst: 8_000)
            #expect(try await api.post(n[1], "/v1/app/setBudgets", ["connectionRequestsPerSecond": 5_000,
                                                                    "connectionBurst": 8_000]).status == 200)
            func everyNode(has budget: ConnectionBudget?) async throws {
                try await cluster.eventually("every node's meta replica to hold \(String(describing: budget))", seconds: 10) {
                    for id in cluster.ids {
                        guard let state = try? await cluster.metaState(via: id),
                              state.connectionBudgets[Self.appKey] == budget else { return false }
                    }
                    return true
                }
            }
            try await everyNode(has: bot)
            expectRefusal(try await api.post(n[2], "/v1/app/setBudgets", ["connectionRequestsPerSecond": 50,
                                                                          "connectionBurst": 10]), 400, 10414)
            expectRefusal(try await api.post(n[2], "/v1/app/setBudgets", ["connectionBurst": 0]), 400, 10414)
            try await everyNode(has: bot)
            #expect(try await api.post(n[0], "/v1/app/setBudgets", ["userMessagesPerSecond": 20]).status == 200)
            try await everyNode(has: nil)
            #expect(room(try await api.post(n[1], "/v1/room/mute", ["roomId": "r1", "mute": true]))["muted"] as? Bool == true)
            #expect(try await api.post(n[2], "/v1/room/allowlist", ["roomId": "r1", "add": true, "accids": ["bob"]]).status == 200)
        }
    }

    @Test func membersQueueAndMessagesThroughEveryNode() async throws {
        try await withAPICluster { cluster in
            let n = cluster.ids.map { cluster.http($0) }
            #expect(try await api.post(n[0], "/v1/room/create", ["roomId": "m1", "creator": "alice", "name": "M"]).status == 200)
            #expect(try await api.post(n[0], "/v1/room/create", ["roomId": "m2", "creator": "alice", "name": "M2"]).status == 200)
            func member(_ a: SignedAPIClient.Answer) -> [String: Any] {
                (a.data["members"] as? [[String: Any]])?.first ?? [:]
            }
            // Roles and restrictions (M2, M8).
            #expect(member(try await api.post(n[1], "/v1/member/setRole", ["roomId": "m1", "accid": "bob", "role": "common",
                                                                           "enable": true]))["type"] as? String == "common")
            #expect(member(try await api.post(n[2], "/v1/member/setRole", ["roomId": "m1", "accid": "bob", "role": "manager",
                                                                           "enable": true]))["type"] as? String == "manager")
            #expect(member(try await api.post(n[0], "/v1/member/setRole", ["roomId": "m1", "accid": "carol", "role": "blocklist",
                                                                           "enable": true, "minutes": 10]))["blocked"] as? Bool == true)
            #expect(member(try await api.post(n[1], "/v1/member/setRole", ["roomId": "m1", "accid": "dave", "role": "mute",
                                                                           "enable": true]))["muted"] as? Bool == true)
            expectRefusal(try await api.post(n[1], "/v1/member/setRole", ["roomId": "m1", "accid": "erin", "role": "owner",
                                                                          "enable": true]), 400, 10414)
            expectRefusal(try await api.post(n[1], "/v1/member/setRole", ["roomId": "m1", "accid": "erin", "role": "mute",
                                                                          "enable": "yes"]), 400, 10400)
            expectRefusal(try await api.post(n[1], "/v1/member/setRole", ["roomId": "nope", "accid": "erin", "role": "mute",
                                                                          "enable": true]), 404, 404)
            let temp = try await api.post(n[2], "/v1/member/tempMute", ["roomId": "m1", "accid": "dave", "seconds": 60])
            #expect(member(temp)["tempMuted"] as? Bool == true && (member(temp)["tempMuteTtl"] as? Int ?? 0) > 0)
            let page = try await api.post(n[0], "/v1/member/page", ["roomId": "m1", "kind": "regular", "limit": 10])
            let ids = Set((page.data["members"] as? [[String: Any]] ?? []).compactMap { $0["accid"] as? String })
            #expect(ids == ["alice", "bob", "carol", "dave"])
            expectRefusal(try await api.post(n[0], "/v1/member/page", ["roomId": "m1", "kind": "everyone", "limit": 10]), 400, 10414)
            let byIds = try await api.post(n[1], "/v1/member/byIds", ["roomId": "m1", "accids": ["bob", "alice"]])
            #expect(Set((byIds.data["members"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }) == ["manager", "creator"])
            expectRefusal(try await api.post(n[1], "/v1/member/byIds", ["roomId": "m1", "accids": (0...20).map { "u\($0)" }]), 400, 414)
            // Kick needs an online member; bob has no session.
            expectRefusal(try await api.post(n[2], "/v1/member/kick", ["roomId": "m1", "accid": "bob"]), 404, 13105)
            // M9 goes to every shard.
            #expect(try await api.post(n[0], "/v1/member/globalMute", ["accid": "eve", "mute": true, "minutes": 5]).data["shardsChanged"] as? Int == cluster.shards)
            #expect(try await api.post(n[1], "/v1/member/globalMute", ["accid": "eve", "mute": false]).data["shardsChanged"] as? Int == cluster.shards)
            #expect(try await api.post(n[2], "/v1/member/globalMute", ["accid": "eve", "mute": false]).data["shardsChanged"] as? Int == 0)
            expectRefusal(try await api.post(n[2], "/v1/member/globalMute", ["accid": "eve", "mute": true, "minutes": 50_000]), 400, 414)

            // Queue (Q1-Q7).
            #expect(try await api.post(n[0], "/v1/queue/init", ["roomId": "m1", "maxSize": 3]).status == 200)
            for k in ["k1", "k2", "k3"] {
                #expect(try await api.post(n[1], "/v1/queue/offer", ["roomId": "m1", "key": k, "value": "v-\(k)"]).status == 200)
            }
            expectRefusal(try await api.post(n[2], "/v1/queue/offer", ["roomId": "m1", "key": "k4", "value": "v"]), 409, 13106)
            expectRefusal(try await api.post(n[2], "/v1/queue/offer", ["roomId": "m1", "key": String(repeating: "k", count: 40),
                                                                       "value": "v"]), 400, 414)
            func keys() async throws -> [String] {
                let list = try await api.post(n[0], "/v1/queue/list", ["roomId": "m1"])
                return (list.data["elements"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
            }
            #expect(try await keys() == ["k1", "k2", "k3"])
            let batch = try await api.post(n[1], "/v1/queue/batchUpdate", ["roomId": "m1", "elements": [
                ["key": "k1", "value": "new"], ["key": "zz", "value": "x"]]])
            #expect(batch.data["notFound"] as? [String] == ["zz"])
            let polled = try await api.post(n[2], "/v1/queue/poll", ["roomId": "m1", "key": "k2"])
            #expect((polled.data["element"] as? [String: Any])?["key"] as? String == "k2")
            let head = try await api.post(n[0], "/v1/queue/poll", ["roomId": "m1"])
            #expect((head.data["element"] as? [String: Any])?["value"] as? String == "new")
            #expect(try await keys() == ["k3"])
            #expect(try await api.post(n[1], "/v1/queue/drop", ["roomId": "m1"]).status == 200)
            #expect(try await keys() == [])
            expectRefusal(try await api.post(n[2], "/v1/queue/poll", ["roomId": "m1"]), 404, 13107)

            // Messages (N1, N2, N5).
            let sent = try await api.post(n[0], "/v1/message/send", ["roomId": "m1", "fromAccid": "alice", "type": "text",
                                                                     "body": "hello", "msgId": "c-1"])
            #expect(sent.status == 200 && (sent.data["seq"] as? Int ?? 0) > 0)
            // A resend with the same msgId (its answer was lost) is the same message, through another node.
            let resent = try await api.post(n[2], "/v1/message/send", ["roomId": "m1", "fromAccid": "alice", "type": "text",
                                                                       "body": "hello", "msgId": "c-1"])
            #expect(resent.data["seq"] as? Int == sent.data["seq"] as? Int && resent.data["time"] as? Int == sent.data["time"] as? Int)
            #expect(try await api.post(n[1], "/v1/message/send", ["roomId": "m1", "type": "tip", "body": "system says"]).status == 200)
            expectRefusal(try await api.post(n[2], "/v1/message/send", ["roomId": "m1", "type": "notification", "body": "x"]), 400, 10414)
            expectRefusal(try await api.post(n[2], "/v1/message/send", ["roomId": "m1", "type": "text", "body": "x",
                                                                        "skipHistory": true]), 400, 10414)
            expectRefusal(try await api.post(n[2], "/v1/message/send", ["roomId": "m1", "type": "text", "body": 12]), 400, 10400)
            expectRefusal(try await api.post(n[2], "/v1/message/send", ["roomId": "m1", "type": "text",
                                                                        "body": String(repeating: "b", count: 100_000)]), 400, 414)
            let broadcast = try await api.post(n[1], "/v1/message/broadcast", ["type": "text", "body": "to everyone"])
            #expect(broadcast.data["rooms"] as? Int == 2 && (broadcast.data["failed"] as? [Any])?.isEmpty == true)
            func bodies(_ roomId: String) async throws -> [String] {
                let h = try await api.post(n[2], "/v1/message/history", ["roomId": roomId, "limit": 10, "types": ["text", "tip"]])
                return (h.data["items"] as? [[String: Any]] ?? []).compactMap { $0["body"] as? String }
            }
            #expect(try await bodies("m1") == ["to everyone", "system says", "hello"])
            #expect(try await bodies("m2") == ["to everyone"])
            let history = try await api.post(n[0], "/v1/message/history", ["roomId": "m1", "limit": 10, "ascending": true,
                                                                           "types": ["tip"]])
            let tip = try #require((history.data["items"] as? [[String: Any]])?.first)
            #expect(tip["fromAccid"] as? String == "$system" && tip["type"] as? String == "tip")
            expectRefusal(try await api.post(n[0], "/v1/message/history", ["roomId": "m1", "limit": 101]), 400, 414)
            expectRefusal(try await api.post(n[0], "/v1/message/history", ["roomId": "m1", "limit": 5, "types": ["spam"]]), 400, 10414)
        }
    }

    @Test func withoutAQuorumTheAPIAnswers503AndRecoversWithIt() async throws {
        try await withAPICluster { cluster in
            #expect(try await api.post(cluster.http(1), "/v1/room/create", ["roomId": "q1", "creator": "a", "name": "Q"]).status == 200)
            cluster.kill9(2)
            cluster.kill9(3)
            // Node 1 still verifies the signature from its meta replica, but no shard leader can be elected.
            expectRefusal(try await api.post(cluster.http(1), "/v1/room/get", ["roomId": "q1"]), 503, 10503)
            try cluster.start(2)
            try await cluster.eventually("a leader again", seconds: 30) {
                (try? await api.post(cluster.http(1), "/v1/room/get", ["roomId": "q1"]))?.status == 200
            }
        }
    }
}
