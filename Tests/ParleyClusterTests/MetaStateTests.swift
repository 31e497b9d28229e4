import Testing
import ParleyCluster
import ParleyRaft
import ParleyRooms
import ParleyWire
@testable import ParleyTransport
import ParleyPlacement

@Suite struct MetaStateTests {
    static let app = ApplyContext(commandIndex: 1, timestamp: 1_000, actor: .appServer)
    static let s = MetaSecrets(clusterSecret: "meta-state-tests")

    static func registered(_ ids: [NodeID]) -> MetaState {
        var m = MetaState()
        for id in ids {
            _ = m.apply(.registerNode(NodeRecord(id: id, peerAddress: "127.0.0.1:\(7100 + id)",
                                                 httpAddress: "127.0.0.1:\(8100 + id)")), context: app)
        }
        return m
    }

    @Test func nodesRegisterOnceAndKeepTheirFirstTimeAndState() {
        var m = Self.registered([1, 2])
        #expect(m.nodes.keys.sorted() == [1, 2])
        #expect(m.nodes[1]!.registeredAt == 1_000 && m.nodes[1]!.state == .active)
        #expect(m.apply(.setNodeState(2, .draining), context: Self.app) == .done)
        let later = ApplyContext(commandIndex: 2, timestamp: 5_000, actor: .appServer)
        #expect(m.apply(.registerNode(NodeRecord(id: 2, peerAddress: "10.0.0.2:7101", httpAddress: "10.0.0.2:8101")),
                        context: later) == .done)
        #expect(m.nodes[2]! == NodeRecord(id: 2, peerAddress: "10.0.0.2:7101", httpAddress: "10.0.0.2:8101",
                                          state: .draining, registeredAt: 1_000))
    }

    /// Issue 17: a node is dropped from the registry only once removed and placed nowhere; a dropped node
    /// never comes back (its id stays taken).
    @Test func onlyARemovedNodeThePlacementLeftIsDroppedAndItStaysDropped() {
        var m = Self.registered([1, 2, 3, 4])
        _ = m.apply(.setPlacement(expectedVersion: 0, replicas: [[1, 2, 4], [2, 3, 4]]), context: Self.app)
        #expect(m.apply(.setNodeState(4, .dropped), context: Self.app)
                == .refusal(.versionConflict, "node 4 is active; only a removed node is dropped"))
        #expect(m.apply(.setNodeState(4, .removed), context: Self.app) == .done)
        #expect(m.apply(.setNodeState(4, .dropped), context: Self.app)
                == .refusal(.versionConflict, "the placement still puts replicas on node 4"))
        _ = m.apply(.setPlacement(expectedVersion: 1, replicas: [[1, 2, 3], [2, 3, 1]]), context: Self.app)
        #expect(m.apply(.setNodeState(4, .dropped), context: Self.app) == .done)
        #expect(m.apply(.setNodeState(4, .active), context: Self.app) == .refusal(.versionConflict, "node 4 has left the cluster"))
        // Registering again (a dropped node's process restarted) changes nothing about its state.
        #expect(m.apply(.registerNode(NodeRecord(id: 4, peerAddress: "127.0.0.1:7104", httpAddress: "127.0.0.1:8104")),
                        context: Self.app) == .done)
        #expect(m.nodes[4]?.state == .dropped)
    }

    @Test func theTableIsInstalledByCompareAndSetOverRegisteredNodes() {
        var m = Self.registered([1, 2, 3])
        #expect(m.apply(.setPlacement(expectedVersion: 0, replicas: [[1, 2, 3], [2, 3, 1]]), context: Self.app)
                == .placement(version: 1))
        // A second node that computed the same table at the same time loses the race, harmlessly.
        #expect(m.apply(.setPlacement(expectedVersion: 0, replicas: [[3, 2, 1]]), context: Self.app)
                == .refusal(.versionConflict, "placement is at version 1, not 0"))
        #expect(m.placement == [[1, 2, 3], [2, 3, 1]] && m.placementVersion == 1)
    }

    @Test func badCommandsAreRefusedAndChangeNothing() {
        var m = Self.registered([1, 2])
        _ = m.apply(.putApp(Self.s.app("app1", secret: String(repeating: "s", count: 32))), context: Self.app)
        let before = m.snapshot()
        let bad: [(MetaCommand, MetaRefusal)] = [
            (.registerNode(NodeRecord(id: 0, peerAddress: "h:1", httpAddress: "h:2")), .badParameter),
            (.registerNode(NodeRecord(id: 5, peerAddress: "no-port", httpAddress: "h:2")), .badParameter),
            (.registerNode(NodeRecord(id: 5, peerAddress: "h:70000", httpAddress: "h:2")), .badParameter),
            (.setNodeState(9, .removed), .notFound),
            (.setPlacement(expectedVersion: 0, replicas: []), .badParameter),
            (.setPlacement(expectedVersion: 0, replicas: [[1, 1]]), .badParameter),
            (.setPlacement(expectedVersion: 0, replicas: [[1, 7]]), .badParameter),
            (.setPlacement(expectedVersion: 3, replicas: [[1, 2]]), .versionConflict),
            (.putApp(Self.s.app("", secret: String(repeating: "s", count: 32))), .badParameter),
            (.putApp(Self.s.app("k", secret: "short")), .badParameter),
            (.putApp(Self.s.app("has space", secret: String(repeating: "s", count: 32))), .badParameter),
            (.removeApp(appKey: "nope"), .notFound),
        ]
        for (command, code) in bad {
            guard case .refused(let got, _) = m.apply(command, context: Self.app) else {
                Issue.record("\(command) was accepted")
                continue
            }
            #expect(got == code.rawValue, "\(command)")
        }
        // Only the cluster itself changes meta state; a client session never can.
        let client = ApplyContext(commandIndex: 3, timestamp: 1, actor: .session(SessionIdentity(userId: "u", sessionId: "s", edgeId: "e")))
        #expect(m.apply(.removeApp(appKey: "app1"), context: client) == .refusal(.noPermission, "only the cluster changes meta state"))
        #expect(m.snapshot() == before)
    }

    @Test func appsArePutReplacedAndRemoved() {
        var m = MetaState()
        let secret = String(repeating: "a", count: 40)
        #expect(m.apply(.putApp(Self.s.app("k1", secret: secret)), context: Self.app) == .done)
        let later = ApplyContext(commandIndex: 2, timestamp: 9_000, actor: .appServer)
        #expect(m.apply(.putApp(Self.s.app("k1", secret: secret + "b")), context: later) == .done)
        #expect(Self.s.open(m.apps["k1"]!.sealedSecret, appKey: "k1") == secret + "b" && m.apps["k1"]!.createdAt == 1_000)
        #expect(m.apply(.removeApp(appKey: "k1"), context: later) == .done)
        #expect(m.apps.isEmpty)
    }

    /// SPEC T2: `createApp` starts a new app with the signing rule it names (CheckSum2 required by default);
    /// an app that exists keeps its rule and takes the new secret, as with `putApp`. `claimNonce` changes
    /// nothing (its request key is the claim).
    @Test func T2_createAppSetsANewAppsSigningAndClaimNonceChangesNothing() throws {
        var m = MetaState()
        let secret = String(repeating: "c", count: 32)
        #expect(m.apply(.createApp(Self.s.app("strict", secret: secret), requireSignedBody: true), context: Self.app) == .done)
        #expect(m.apply(.createApp(Self.s.app("nim", secret: secret), requireSignedBody: false), context: Self.app) == .done)
        #expect(m.apps["strict"]?.requiresSignedBody == true && m.apps["nim"]?.requiresSignedBody == false)
        _ = m.apply(.setAppSigning(appKey: "strict", requireSignedBody: false), context: Self.app)
        #expect(m.apply(.createApp(Self.s.app("strict", secret: secret + "x"), requireSignedBody: true), context: Self.app) == .done)
        #expect(m.apps["strict"]?.requiresSignedBody == false, "an existing app keeps the rule it chose")
        #expect(Self.s.open(m.apps["strict"]!.sealedSecret, appKey: "strict") == secret + "x")
        #expect(m.apply(.createApp(AppCredential(appKey: "", sealedSecret: []), requireSignedBody: true), context: Self.app)
                == .refusal(.badParameter, "appKey must be 1-64 printable bytes and the secret 16-128 bytes"))
        let before = m
        #expect(m.apply(.claimNonce(scope: "nim"), context: Self.app) == .done)
        #expect(m.apply(.claimNonce(scope: PeerTokenCheck.joinScope), context: Self.app) == .done)
        #expect(m == before)
        // The rule survives a snapshot.
        #expect(try MetaState(restoring: m.snapshot()).apps["nim"]?.requiresSignedBody == false)
        #expect(try MetaState(restoring: m.snapshot()).apps["strict"]?.requiresSignedBody == false)
    }

    @Test func snapshotsAreDeterministicAndRoundTrip() throws {
        var a = Self.registered([3, 1, 2])
        var b = Self.registered([1, 2, 3])
        // Sealing draws a fresh nonce, so both replicas apply the same sealed bytes, as from one log entry.
        let z = Self.s.app("z", secret: String(repeating: "1", count: 16))
        let first = Self.s.app("a", secret: String(repeating: "2", count: 16))
        _ = a.apply(.putApp(z), context: Self.app)
        _ = a.apply(.putApp(first), context: Self.app)
        _ = b.apply(.putApp(first), context: Self.app)
        _ = b.apply(.putApp(z), context: Self.app)
        _ = a.apply(.setPlacement(expectedVersion: 0, replicas: [[1, 2], [3, 1]]), context: Self.app)
        _ = b.apply(.setPlacement(expectedVersion: 0, replicas: [[1, 2], [3, 1]]), context: Self.app)
        #expect(a.snapshot() == b.snapshot())  // insertion order does not show
        #expect(try MetaState(restoring: a.snapshot()) == a)
        let bytes = a.snapshot()
        for cut in 0..<bytes.count { #expect(throws: (any Error).self) { try MetaState(restoring: Array(bytes[..<cut])) } }
    }

    /// SPEC A1: an app's connection request budget is set, reset and removed with the app; bad ones are
    /// refused; a state without any is still written as snapshot 4 (what nodes of peer protocol 5 read),
    /// one with some as 5, and both restore.
    @Test func A1_connectionBudgetsAreKeptPerAppAndSnapshotAsVersion5OnlyWhenThereAreSome() throws {
        var m = Self.registered([1])
        _ = m.apply(.putApp(Self.s.app("k", secret: String(repeating: "1", count: 16))), context: Self.app)
        #expect(m.snapshot().first == 4)
        let plain = m.snapshot()
        let bot = ConnectionBudget(requestsPerSecond: 5_000, burst: 10_000)
        #expect(m.apply(.setConnectionBudget(appKey: "nope", bot), context: Self.app) == .refusal(.notFound, "no app nope"))
        for bad in [ConnectionBudget(requestsPerSecond: 0, burst: 1), ConnectionBudget(requestsPerSecond: 10, burst: 9),
                    ConnectionBudget(requestsPerSecond: 1_000_001, burst: 1_000_001)] {
            guard case .refused(let code, _) = m.apply(.setConnectionBudget(appKey: "k", bad), context: Self.app) else {
                Issue.record("\(bad) was accepted"); continue
            }
            #expect(code == MetaRefusal.badParameter.rawValue)
        }
        #expect(m.snapshot() == plain)
        #expect(m.apply(.setConnectionBudget(appKey: "k", bot), context: Self.app) == .done)
        #expect(m.connectionBudgets == ["k": bot])
        let withBudget = m.snapshot()
        #expect(withBudget.first == 5)
        #expect(try MetaState(restoring: withBudget) == m)
        for cut in 0..<withBudget.count { #expect(throws: (any Error).self) { try MetaState(restoring: Array(withBudget[..<cut])) } }
        #expect(try MetaState(restoring: plain).connectionBudgets.isEmpty)
        #expect(m.apply(.setConnectionBudget(appKey: "k", nil), context: Self.app) == .done)
        #expect(m.snapshot() == plain)
        _ = m.apply(.setConnectionBudget(appKey: "k", bot), context: Self.app)
        _ = m.apply(.removeApp(appKey: "k"), context: Self.app)
        #expect(m.connectionBudgets.isEmpty)
    }

    /// SPEC D3: an app's room ceiling is set, removed and goes with the app; one out of range is refused; a state
    /// with one is snapshot 7 (with the budgets' and webhooks' sections before it, empty or not), one without
    /// keeps the version it had, and both restore.
    @Test func D3_roomCeilingsAreKeptPerAppAndSnapshotAsVersion7OnlyWhenThereAreSome() throws {
        var m = Self.registered([1])
        _ = m.apply(.putApp(Self.s.app("k", secret: String(repeating: "1", count: 16))), context: Self.app)
        let plain = m.snapshot()
        #expect(plain.first == 4)
        #expect(m.apply(.setRoomCeiling(appKey: "nope", messagesPerSecond: 5), context: Self.app) == .refusal(.notFound, "no app nope"))
        for bad in [0, -1, 1_000_001] {
            guard case .refused(let code, _) = m.apply(.setRoomCeiling(appKey: "k", messagesPerSecond: bad), context: Self.app) else {
                Issue.record("\(bad) was accepted"); continue
            }
            #expect(code == MetaRefusal.badParameter.rawValue)
        }
        #expect(m.snapshot() == plain)
        #expect(m.apply(.setRoomCeiling(appKey: "k", messagesPerSecond: 40), context: Self.app) == .done)
        #expect(m.roomCeilings == ["k": 40])
        let withCeiling = m.snapshot()
        #expect(withCeiling.first == 7)
        #expect(try MetaState(restoring: withCeiling) == m)
        for cut in 0..<withCeiling.count { #expect(throws: (any Error).self) { try MetaState(restoring: Array(withCeiling[..<cut])) } }
        // With a connection budget as well, both come back.
        _ = m.apply(.setConnectionBudget(appKey: "k", ConnectionBudget(requestsPerSecond: 9, burst: 9)), context: Self.app)
        #expect(try MetaState(restoring: m.snapshot()) == m)
        #expect(m.apply(.setRoomCeiling(appKey: "k", messagesPerSecond: nil), context: Self.app) == .done)
        #expect(m.snapshot().first == 5)
        _ = m.apply(.setRoomCeiling(appKey: "k", messagesPerSecond: 3), context: Self.app)
        _ = m.apply(.removeApp(appKey: "k"), context: Self.app)
        #expect(m.roomCeilings.isEmpty)
    }

    @Test func commandsRoundTripTheCodec() throws {
        let commands: [MetaCommand] = [
            .registerNode(NodeRecord(id: 4, peerAddress: "a:1", httpAddress: "b:2", state: .draining, registeredAt: 9)),
            .setNodeState(4, .removed), .setPlacement(expectedVersion: 2, replicas: [[1, 2, 3], [4]]),
            .putApp(AppCredential(appKey: "k", sealedSecret: [1, 2, 3], createdAt: 3)),
            .putUser(UserRecord(appKey: "k", account: "a", tokenDigest: [7, 8], tokenExpiresAt: 5)), .removeApp(appKey: "k"),
            .createApp(AppCredential(appKey: "k", sealedSecret: [4], createdAt: 0), requireSignedBody: true),
            .createApp(AppCredential(appKey: "n", sealedSecret: [5], createdAt: 0), requireSignedBody: false),
            .claimNonce(scope: "k"),
            .setConnectionBudget(appKey: "k", ConnectionBudget(requestsPerSecond: 7, burst: 9)),
            .setConnectionBudget(appKey: "k", nil),
            .setRoomCeiling(appKey: "k", messagesPerSecond: 250),
            .setRoomCeiling(appKey: "k", messagesPerSecond: nil),
        ]
        for c in commands { #expect(try MetaCommand(decoding: c.encoded()) == c) }
        for o in [MetaOutcome.done, .placement(version: 7), .refusal(.notFound, "x")] {
            #expect(try MetaOutcome(decoding: o.encoded()) == o)
        }
        #expect(throws: CodecError.self) { try MetaCommand(decoding: [9]) }
        // Tags 3 and 5 carried the secret and the token in clear: no longer read.
        #expect(throws: CodecError.self) { try MetaCommand(decoding: [3, 1, 0x6B, 1, 0x73, 3]) }
    }

    /// E4 / E5: users and their tokens, checked at a given time; refreshing replaces the token and lifts a revoke.
    @Test func usersTokensAreCheckedRefreshedAndRevoked() throws {
        var m = MetaState()
        _ = m.apply(.putApp(Self.s.app("app", secret: String(repeating: "s", count: 32))), context: Self.app)
        let user = Self.s.user(appKey: "app", account: "alice", name: "Alice", token: "t1", tokenExpiresAt: 10_000)
        #expect(m.apply(.putUser(user), context: Self.app) == .done)
        guard case .valid(let got) = m.checkToken(appKey: "app", account: "alice", token: "t1", now: 5_000, secrets: Self.s) else {
            Issue.record("a fresh token was refused")
            return
        }
        #expect(got.name == "Alice" && got.createdAt == 1_000)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t2", now: 5_000, secrets: Self.s) == .badToken)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t", now: 5_000, secrets: Self.s) == .badToken)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t1", now: 10_000, secrets: Self.s) == .expired)
        #expect(m.checkToken(appKey: "app", account: "bob", token: "t1", now: 5_000, secrets: Self.s) == .unknownUser)
        #expect(m.checkToken(appKey: "other", account: "alice", token: "t1", now: 5_000, secrets: Self.s) == .unknownApp)
        #expect(m.apply(.revokeToken(appKey: "app", account: "alice"), context: Self.app) == .done)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t1", now: 5_000, secrets: Self.s) == .revoked)
        let later = ApplyContext(commandIndex: 5, timestamp: 7_000, actor: .appServer)
        #expect(m.apply(.putUser(Self.s.user(appKey: "app", account: "alice", token: "t3")), context: later) == .done)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t3", now: 99_000_000, secrets: Self.s) != .revoked)
        #expect(m.user(appKey: "app", account: "alice")?.createdAt == 1_000)
        // Survives a snapshot round trip.
        #expect(try MetaState(restoring: m.snapshot()) == m)
        // Bad users change nothing.
        let before = m.snapshot()
        for bad in [Self.s.user(appKey: "nope", account: "x", token: "t"),
                    Self.s.user(appKey: "app", account: "", token: "t"),
                    Self.s.user(appKey: "app", account: "has space", token: "t"),
                    UserRecord(appKey: "app", account: "x", tokenDigest: []),
                    UserRecord(appKey: "app", account: "x", tokenDigest: [UInt8](repeating: 1, count: 33)),
                    Self.s.user(appKey: "app", account: "x", token: "t", tokenExpiresAt: -1)] {
            guard case .refused = m.apply(.putUser(bad), context: Self.app) else {
                Issue.record("\(bad) was accepted")
                continue
            }
        }
        guard case .refused = m.apply(.revokeToken(appKey: "app", account: "ghost"), context: Self.app) else {
            Issue.record("revoking an unknown user was accepted")
            return
        }
        #expect(m.snapshot() == before)
        // Removing the app removes its users.
        #expect(m.apply(.removeApp(appKey: "app"), context: Self.app) == .done)
        #expect(m.users.isEmpty)
    }

    /// Issue 24: the log entries and the snapshot (what SQLite and `meta/state` hold) carry neither the app
    /// secret nor the token in clear; the digest is bound to its app and account, and the sealed secret to
    /// its app.
    @Test func secretsAndTokensAreNeverStoredInClear() throws {
        var m = MetaState()
        let secret = "app-secret-CLEARTEXT-1234", token = "token-CLEARTEXT-5678"
        let putApp = MetaCommand.putApp(Self.s.app("app", secret: secret))
        let putUser = MetaCommand.putUser(Self.s.user(appKey: "app", account: "alice", token: token))
        #expect(m.apply(putApp, context: Self.app) == .done && m.apply(putUser, context: Self.app) == .done)
        func holds(_ bytes: [UInt8], _ text: String) -> Bool {
            let needle = Array(text.utf8)
            return bytes.count >= needle.count && (0...(bytes.count - needle.count)).contains { Array(bytes[$0..<$0 + needle.count]) == needle }
        }
        for bytes in [putApp.encoded(), putUser.encoded(), m.snapshot()] {
            #expect(!holds(bytes, "CLEARTEXT"))
        }
        #expect(holds(m.snapshot(), "alice"), "the search itself finds what is there")
        let digest = m.user(appKey: "app", account: "alice")!.tokenDigest
        #expect(!Self.s.tokenMatches(digest, appKey: "app", account: "bob", token: token))
        #expect(!Self.s.tokenMatches(digest, appKey: "app2", account: "alice", token: token))
        #expect(!MetaSecrets(clusterSecret: "another").tokenMatches(digest, appKey: "app", account: "alice", token: token))
        #expect(Self.s.open(m.apps["app"]!.sealedSecret, appKey: "app") == secret)
        #expect(Self.s.open(m.apps["app"]!.sealedSecret, appKey: "app2") == nil)
        #expect(MetaSecrets(clusterSecret: "another").open(m.apps["app"]!.sealedSecret, appKey: "app") == nil)
    }
}
