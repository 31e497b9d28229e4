import Crypto
import Foundation

/// Keeps app secrets and user tokens out of the meta state in clear (issue 24): a user's token is stored
/// as a keyed digest (HMAC-SHA256, the key derived from the cluster secret), an app's secret — which a node
/// must use to check signatures — sealed with AES-GCM under another key derived from it. The Raft log, the
/// snapshots in SQLite and `meta/state` on the peer port carry only these forms, so a copy of a data folder
/// or a captured meta read yields no token and no secret without the cluster secret too.
///
/// Sealing and digesting happen on the node that takes the API call, before the command is proposed: the
/// state machine stores bytes and never sees a key (apply stays a pure function of the log).
public struct MetaSecrets: Sendable {
    private let tokenKey: SymmetricKey
    private let sealKey: SymmetricKey

    public static let digestBytes = 32
    /// AES-GCM's nonce and tag around the secret.
    public static let sealOverhead = 12 + 16

    public init(clusterSecret: String) {
        let root = SymmetricKey(data: SHA256.hash(data: Data("parley-meta-secrets:\(clusterSecret)".utf8)))
        tokenKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: root, info: Data("parley token digest v1".utf8),
                                          outputByteCount: 32)
        sealKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: root, info: Data("parley app secret seal v1".utf8),
                                         outputByteCount: 32)
    }

    /// The stored form of a login token. Bound to the app and the account, so one digest proves nothing for
    /// another user with the same token.
    public func tokenDigest(appKey: String, account: String, token: String) -> [UInt8] {
        let message = Data("\(appKey)\u{1F}\(account)\u{1F}\(token)".utf8)
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: tokenKey))
    }

    /// Whether `token` is the one `digest` was made from, in constant time.
    public func tokenMatches(_ digest: [UInt8], appKey: String, account: String, token: String) -> Bool {
        let given = tokenDigest(appKey: appKey, account: account, token: token)
        guard digest.count == given.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<given.count { diff |= digest[i] ^ given[i] }
        return diff == 0
    }

    /// The stored form of an app secret (a fresh nonce each time, so equal secrets do not look equal).
    public func seal(_ secret: String, appKey: String) -> [UInt8] {
        // The app key is authenticated data: a sealed secret moved onto another app does not open.
        let box = try! AES.GCM.seal(Data(secret.utf8), using: sealKey, authenticating: Data(appKey.utf8))
        return Array(box.combined!)
    }

    /// The secret sealed for `appKey`, or nil when the bytes were not sealed with this cluster's key.
    public func open(_ sealed: [UInt8], appKey: String) -> String? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
              let clear = try? AES.GCM.open(box, using: sealKey, authenticating: Data(appKey.utf8)) else { return nil }
        return String(bytes: clear, encoding: .utf8)
    }

    /// An app credential as the meta group stores it.
    public func app(_ appKey: String, secret: String) -> AppCredential {
        AppCredential(appKey: appKey, sealedSecret: seal(secret, appKey: appKey))
    }

    /// A user record as the meta group stores it.
    public func user(appKey: String, account: String, name: String = "", avatar: String = "", token: String,
                     tokenExpiresAt: Int64 = 0) -> UserRecord {
        UserRecord(appKey: appKey, account: account, name: name, avatar: avatar,
                   tokenDigest: tokenDigest(appKey: appKey, account: account, token: token),
                   tokenExpiresAt: tokenExpiresAt)
    }
}
