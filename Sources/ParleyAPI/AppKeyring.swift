import Foundation
import ParleyCluster
import ParleyPlacement

/// The app secrets a node checks signatures with: the meta group's apps, re-read at most once per
/// `maxAge` seconds. A node without a meta replica fetches the whole meta state (users included) for a read,
/// so reading it for every request would cost far more than the request; an app added or removed takes
/// effect on every node within `maxAge`. Secrets are opened (`MetaSecrets`) once per read, not per request.
final class AppKeyring: @unchecked Sendable {
    /// An app's settings with its secret opened.
    struct App: Sendable, Equatable {
        var secret: String
        var requiresSignedBody: Bool
    }

    private let lock = NSLock()
    private var apps: [String: App] = [:]
    private var readAt: Int64?
    private let maxAge: Int64

    init(maxAge: Int64 = 1) { self.maxAge = maxAge }

    /// The app's credential, reading the meta state first when the copy is older than `maxAge` (`now` in
    /// seconds). Throws when the meta state cannot be read (no meta leader or replica answered).
    /// An app whose secret does not open with `secrets` (sealed by a cluster with another secret) is
    /// treated as unknown.
    func app(_ key: String, now: Int64, secrets: MetaSecrets, read: () async throws -> MetaState) async throws -> App? {
        let fresh: [String: App]? = lock.withLock {
            guard let at = readAt, now - at < maxAge, now >= at else { return nil }
            return apps
        }
        if let fresh { return fresh[key] }
        var current: [String: App] = [:]
        for (appKey, credential) in try await read().apps {
            guard let secret = secrets.open(credential.sealedSecret, appKey: appKey) else { continue }
            current[appKey] = App(secret: secret, requiresSignedBody: credential.requiresSignedBody)
        }
        lock.withLock {
            apps = current
            readAt = now
        }
        return current[key]
    }
}
