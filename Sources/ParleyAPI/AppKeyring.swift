import Foundation
import ParleyCluster

/// The app secrets a node checks signatures with: the meta group's apps, re-read at most once per
/// `maxAge` seconds. A node without a meta replica fetches the whole meta state (users included) for a read,
/// so reading it for every request would cost far more than the request; an app added or removed takes
/// effect on every node within `maxAge`.
final class AppKeyring: @unchecked Sendable {
    private let lock = NSLock()
    private var apps: [String: AppCredential] = [:]
    private var readAt: Int64?
    private let maxAge: Int64

    init(maxAge: Int64 = 1) { self.maxAge = maxAge }

    /// The app's credential, reading the meta state first when the copy is older than `maxAge` (`now` in
    /// seconds). Throws when the meta state cannot be read (no meta leader or replica answered).
    func app(_ key: String, now: Int64, read: () async throws -> MetaState) async throws -> AppCredential? {
        let fresh: [String: AppCredential]? = lock.withLock {
            guard let at = readAt, now - at < maxAge, now >= at else { return nil }
            return apps
        }
        if let fresh { return fresh[key] }
        let current = try await read().apps
        lock.withLock {
            apps = current
            readAt = now
        }
        return current[key]
    }
}
