import NIOConcurrencyHelpers
import Testing
import ParleyCluster
@testable import ParleyTransport

/// SPEC A3 (issue 24): a peer credential seen once opens nothing else — not on another node, not a second
/// time, not after its window — and a forged or foreign-cluster one opens nothing at all.
@Suite struct PeerTokenCheckTests {
    let auth = PeerAuth(secret: "cluster-secret")

    func check(node: UInt64, now: Int64, capacity: Int = 100) -> PeerTokenCheck {
        PeerTokenCheck(auth: auth, nodeID: node, capacity: capacity, clock: { now })
    }

    func headers(_ list: [(String, String)]) -> (String) -> String? {
        { name in list.first { $0.0 == name }?.1 }
    }

    @Test func aCredentialIsGoodOnceForItsNodeWithinItsWindow() {
        let now: Int64 = 1_800_000_000
        let made = auth.headers(from: 2, to: 3, path: "/rpc/v1/stream", now: now)
        let node3 = check(node: 3, now: now)
        #expect(node3.check(path: "/rpc/v1/stream", header: headers(made)) == .success(2))
        #expect(node3.check(path: "/rpc/v1/stream", header: headers(made)) == .failure(.replayed))
        // On another node, for another path, or later: refused.
        #expect(check(node: 1, now: now).check(path: "/rpc/v1/stream", header: headers(made)) == .failure(.badToken))
        #expect(check(node: 3, now: now).check(path: "/rpc/v1/meta/state", header: headers(made)) == .failure(.badToken))
        #expect(check(node: 3, now: now + 31).check(path: "/rpc/v1/stream", header: headers(made)) == .failure(.stale))
        #expect(check(node: 3, now: now - 31).check(path: "/rpc/v1/stream", header: headers(made)) == .failure(.stale))
        // Within the window but on a node that has not seen it (a fresh listener): accepted once.
        #expect(check(node: 3, now: now + 30).check(path: "/rpc/v1/stream", header: headers(made)) == .success(2))
    }

    @Test func forgedMissingOrForeignCredentialsAreRefusedAndNotRemembered() {
        let now: Int64 = 1_800_000_000
        let node3 = check(node: 3, now: now, capacity: 2)
        let foreign = PeerAuth(secret: "another-cluster").headers(from: 2, to: 3, path: "/raft/v1/stream", now: now)
        #expect(node3.check(path: "/raft/v1/stream", header: headers(foreign)) == .failure(.badToken))
        var forged = auth.headers(from: 2, to: 3, path: "/raft/v1/stream", now: now)
        forged[3].1 = String(repeating: "0", count: 64)
        #expect(node3.check(path: "/raft/v1/stream", header: headers(forged)) == .failure(.badToken))
        #expect(node3.check(path: "/raft/v1/stream", header: headers(forged.filter { $0.0 != "x-parley-nonce" }))
            == .failure(.missing))
        // Refused ones took no room: two good ones fit, a third live one is refused rather than a nonce forgotten.
        for _ in 0..<2 {
            #expect(node3.check(path: "/raft/v1/stream", header: headers(auth.headers(from: 2, to: 3, path: "/raft/v1/stream", now: now)))
                == .success(2))
        }
        #expect(node3.check(path: "/raft/v1/stream", header: headers(auth.headers(from: 2, to: 3, path: "/raft/v1/stream", now: now)))
            == .failure(.full))
    }
}
