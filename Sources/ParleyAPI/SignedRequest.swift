import ParleyCluster
import Synchronization
import ParleyShardState

/// The signed request being served (SPEC A7), so every command it proposes carries a key of its own:
/// `app␟nonce#group#n`, the n-th command this request sent to that group. A replay of the request, to any
/// node, proposes the same keys in the same order and its first command is refused (10406) by the group that
/// applied the original. The key lives while the request's CurTime could still pass a node's window.
final class SignedRequest: Sendable {
    @TaskLocal static var current: SignedRequest?

    private let prefix: String
    private let expiresAt: Int64
    private let sent = Mutex<[String: Int]>([:])

    init(appKey: String, nonce: String, curTime: Int64, now: Int64) {
        prefix = "\(appKey)\u{1F}\(nonce)"
        expiresAt = RequestKey.expiry(signedAt: curTime, now: now, window: RequestSignature.window)
    }

    /// SPEC T2: the key that claims this request's nonce in the whole cluster (`MetaCommand.claimNonce`),
    /// whatever the call: a second request with the same app and nonce meets it, on any node.
    var nonceClaim: RequestKey { RequestKey(id: "\(prefix)#nonce", expiresAt: expiresAt) }

    /// The key of the next command for `group` (an endpoint sends a group its commands in a fixed order).
    func key(for group: String) -> RequestKey {
        let n = sent.withLock { counts -> Int in
            defer { counts[group, default: 0] += 1 }
            return counts[group, default: 0]
        }
        return RequestKey(id: "\(prefix)#\(group)#\(n)", expiresAt: expiresAt)
    }
}
