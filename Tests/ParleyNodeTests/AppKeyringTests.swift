import Testing
@testable import ParleyAPI
import ParleyCluster
import ParleyRooms

/// The keyring reads the meta state at most once per second and sees a new app after that.
@Suite struct AppKeyringTests {
    final class MetaSource: @unchecked Sendable {
        var state = MetaState()
        var reads = 0

        func read() async throws -> MetaState {
            reads += 1
            return state
        }

        func put(_ key: String) {
            _ = state.apply(.putApp(AppCredential(appKey: key, secret: "0123456789abcdef")),
                            context: ApplyContext(commandIndex: 1, timestamp: 1, actor: .appServer))
        }
    }

    @Test func readsAtMostOncePerSecondAndThenSeesChanges() async throws {
        let meta = MetaSource()
        meta.put("a")
        let keyring = AppKeyring(maxAge: 1)
        #expect(try await keyring.app("a", now: 100, read: meta.read)?.appKey == "a")
        meta.put("b")
        #expect(try await keyring.app("b", now: 100, read: meta.read) == nil, "within the second: the old copy")
        #expect(meta.reads == 1)
        #expect(try await keyring.app("b", now: 101, read: meta.read)?.appKey == "b")
        #expect(meta.reads == 2)
        // A clock that went backwards does not keep a copy forever.
        #expect(try await keyring.app("b", now: 50, read: meta.read)?.appKey == "b")
        #expect(meta.reads == 3)
    }
}
