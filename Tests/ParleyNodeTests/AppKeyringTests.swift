import Testing
@testable import ParleyAPI
import ParleyCluster
import ParleyRooms
import ParleyPlacement

/// The keyring reads the meta state at most once per second and sees a new app after that.
@Suite struct AppKeyringTests {
    static let secrets = MetaSecrets(clusterSecret: "keyring-test")

    final class MetaSource: @unchecked Sendable {
        var state = MetaState()
        var reads = 0

        func read() async throws -> MetaState {
            reads += 1
            return state
        }

        func put(_ key: String) {
            _ = state.apply(.putApp(AppKeyringTests.secrets.app(key, secret: "0123456789abcdef-\(key)")),
                            context: ApplyContext(commandIndex: 1, timestamp: 1, actor: .appServer))
        }
    }

    @Test func readsAtMostOncePerSecondAndThenSeesChanges() async throws {
        let meta = MetaSource()
        meta.put("a")
        let keyring = AppKeyring(maxAge: 1)
        #expect(try await keyring.app("a", now: 100, secrets: Self.secrets, read: meta.read)?.secret == "0123456789abcdef-a")
        meta.put("b")
        #expect(try await keyring.app("b", now: 100, secrets: Self.secrets, read: meta.read) == nil, "within the second: the old copy")
        #expect(meta.reads == 1)
        #expect(try await keyring.app("b", now: 101, secrets: Self.secrets, read: meta.read)?.secret == "0123456789abcdef-b")
        #expect(meta.reads == 2)
        // A clock that went backwards does not keep a copy forever.
        #expect(try await keyring.app("b", now: 50, secrets: Self.secrets, read: meta.read)?.secret == "0123456789abcdef-b")
        #expect(meta.reads == 3)
    }

    /// Issue 24: a secret sealed under another cluster secret does not open here: the app is unknown.
    @Test func anAppSealedByAnotherClusterIsUnknown() async throws {
        let meta = MetaSource()
        _ = meta.state.apply(.putApp(MetaSecrets(clusterSecret: "other-cluster").app("x", secret: "0123456789abcdef")),
                             context: ApplyContext(commandIndex: 1, timestamp: 1, actor: .appServer))
        #expect(try await AppKeyring(maxAge: 1).app("x", now: 1, secrets: Self.secrets, read: meta.read) == nil)
    }
}
