import Testing
import ParleyCluster
import ParleyRaft
import ParleyRooms
import ParleyWire

@Suite struct MetaStateTests {
    static let app = ApplyContext(commandIndex: 1, timestamp: 1_000, actor: .appServer)

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
        _ = m.apply(.putApp(AppCredential(appKey: "app1", secret: String(repeating: "s", count: 32))), context: Self.app)
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
            (.putApp(AppCredential(appKey: "", secret: String(repeating: "s", count: 32))), .badParameter),
            (.putApp(AppCredential(appKey: "k", secret: "short")), .badParameter),
            (.putApp(AppCredential(appKey: "has space", secret: String(repeating: "s", count: 32))), .badParameter),
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
        #expect(m.apply(.putApp(AppCredential(appKey: "k1", secret: secret)), context: Self.app) == .done)
        let later = ApplyContext(commandIndex: 2, timestamp: 9_000, actor: .appServer)
        #expect(m.apply(.putApp(AppCredential(appKey: "k1", secret: secret + "b")), context: later) == .done)
        #expect(m.apps["k1"] == AppCredential(appKey: "k1", secret: secret + "b", createdAt: 1_000))
        #expect(m.apply(.removeApp(appKey: "k1"), context: later) == .done)
        #expect(m.apps.isEmpty)
    }

    @Test func snapshotsAreDeterministicAndRoundTrip() throws {
        var a = Self.registered([3, 1, 2])
        var b = Self.registered([1, 2, 3])
        _ = a.apply(.putApp(AppCredential(appKey: "z", secret: String(repeating: "1", count: 16))), context: Self.app)
        _ = a.apply(.putApp(AppCredential(appKey: "a", secret: String(repeating: "2", count: 16))), context: Self.app)
        _ = b.apply(.putApp(AppCredential(appKey: "a", secret: String(repeating: "2", count: 16))), context: Self.app)
        _ = b.apply(.putApp(AppCredential(appKey: "z", secret: String(repeating: "1", count: 16))), context: Self.app)
        _ = a.apply(.setPlacement(expectedVersion: 0, replicas: [[1, 2], [3, 1]]), context: Self.app)
        _ = b.apply(.setPlacement(expectedVersion: 0, replicas: [[1, 2], [3, 1]]), context: Self.app)
        #expect(a.snapshot() == b.snapshot())  // insertion order does not show
        #expect(try MetaState(restoring: a.snapshot()) == a)
        let bytes = a.snapshot()
        for cut in 0..<bytes.count { #expect(throws: (any Error).self) { try MetaState(restoring: Array(bytes[..<cut])) } }
    }

    @Test func commandsRoundTripTheCodec() throws {
        let commands: [MetaCommand] = [
            .registerNode(NodeRecord(id: 4, peerAddress: "a:1", httpAddress: "b:2", state: .draining, registeredAt: 9)),
            .setNodeState(4, .removed), .setPlacement(expectedVersion: 2, replicas: [[1, 2, 3], [4]]),
            .putApp(AppCredential(appKey: "k", secret: "s", createdAt: 3)), .removeApp(appKey: "k"),
        ]
        for c in commands { #expect(try MetaCommand(decoding: c.encoded()) == c) }
        for o in [MetaOutcome.done, .placement(version: 7), .refusal(.notFound, "x")] {
            #expect(try MetaOutcome(decoding: o.encoded()) == o)
        }
        #expect(throws: CodecError.self) { try MetaCommand(decoding: [9]) }
    }

    /// E4 / E5: users and their tokens, checked at a given time; refreshing replaces the token and lifts a revoke.
    @Test func usersTokensAreCheckedRefreshedAndRevoked() throws {
        var m = MetaState()
        _ = m.apply(.putApp(AppCredential(appKey: "app", secret: String(repeating: "s", count: 32))), context: Self.app)
        let user = UserRecord(appKey: "app", account: "alice", name: "Alice", token: "t1", tokenExpiresAt: 10_000)
        #expect(m.apply(.putUser(user), context: Self.app) == .done)
        guard case .valid(let got) = m.checkToken(appKey: "app", account: "alice", token: "t1", now: 5_000) else {
            Issue.record("a fresh token was refused")
            return
        }
        #expect(got.name == "Alice" && got.createdAt == 1_000)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t2", now: 5_000) == .badToken)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t", now: 5_000) == .badToken)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t1", now: 10_000) == .expired)
        #expect(m.checkToken(appKey: "app", account: "bob", token: "t1", now: 5_000) == .unknownUser)
        #expect(m.checkToken(appKey: "other", account: "alice", token: "t1", now: 5_000) == .unknownApp)
        #expect(m.apply(.revokeToken(appKey: "app", account: "alice"), context: Self.app) == .done)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t1", now: 5_000) == .revoked)
        let later = ApplyContext(commandIndex: 5, timestamp: 7_000, actor: .appServer)
        #expect(m.apply(.putUser(UserRecord(appKey: "app", account: "alice", token: "t3")), context: later) == .done)
        #expect(m.checkToken(appKey: "app", account: "alice", token: "t3", now: 99_000_000) != .revoked)
        #expect(m.user(appKey: "app", account: "alice")?.createdAt == 1_000)
        // Survives a snapshot round trip.
        #expect(try MetaState(restoring: m.snapshot()) == m)
        // Bad users change nothing.
        let before = m.snapshot()
        for bad in [UserRecord(appKey: "nope", account: "x", token: "t"),
                    UserRecord(appKey: "app", account: "", token: "t"),
                    UserRecord(appKey: "app", account: "has space", token: "t"),
                    UserRecord(appKey: "app", account: "x", token: ""),
                    UserRecord(appKey: "app", account: "x", token: String(repeating: "t", count: 257)),
                    UserRecord(appKey: "app", account: "x", token: "t", tokenExpiresAt: -1)] {
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
}
