import Foundation
import ParleyCluster
import ParleyPlacement
import Synchronization

/// What an edge enforces per app, kept in the meta group and read here: SPEC A1's connection request budget
/// (all ops together) and D3's room ceiling (the most messages a second this edge delivers to one room). A
/// connection that has not entered a room or logged in for IM has no app yet and gets the node's default
/// budget; once it has one, its app's (`/v1/app/setBudgets`) applies. An app's limits are read at every enter
/// and IM login, and again in the background at most once a second while its connections keep sending or its
/// rooms keep speaking, so a change reaches connections already open within about a second, and neither the
/// request path nor the fan-out ever waits for it.
///
/// Shared by the edge and the connections' event loops (which charge room commands themselves, issue 35).
final class AppLimits: Sendable {
    private struct Known {
        var budget: ConnectionBudget
        var roomCeiling: Int?
        var readAt: ContinuousClock.Instant
        var reading = false
    }

    /// How long an app's limits are used before they are read again.
    static let maxAge = Duration.seconds(1)

    private let cluster: any EdgeCluster
    private let fallback: ConnectionBudget
    private let known = Mutex<[String: Known]>([:])

    init(cluster: any EdgeCluster, fallback: ConnectionBudget) {
        self.cluster = cluster
        self.fallback = fallback
    }

    /// The budget for the next request of a connection of `app` (nil: no app yet): the app's as last read, or
    /// the node's default.
    func budget(ofApp app: String?) -> ConnectionBudget {
        guard let app else { return fallback }
        return known(app)?.budget ?? fallback
    }

    /// D3: the app's room ceiling as last read (nil: none, or not read yet).
    func roomCeiling(ofApp app: String) -> Int? {
        known(app)?.roomCeiling
    }

    /// The app's limits as last read (nil: never read). Limits older than `maxAge` are read again in the
    /// background, once at a time.
    private func known(_ app: String) -> Known? {
        let (entry, refresh) = known.withLock { all -> (Known?, Bool) in
            guard var entry = all[app] else {
                all[app] = Known(budget: fallback, readAt: .now, reading: true)
                return (nil, true)
            }
            let refresh = !entry.reading && entry.readAt.duration(to: .now) > Self.maxAge
            if refresh {
                entry.reading = true
                all[app] = entry
            }
            return (entry, refresh)
        }
        if refresh { Task { await self.read(ofApp: app) } }
        return entry
    }

    /// Reads the app's limits now (an enter or IM login binding a connection to the app).
    func read(ofApp app: String) async {
        async let budget = cluster.connectionBudget(ofApp: app)
        async let ceiling = cluster.roomCeiling(ofApp: app)
        let read = Known(budget: await budget ?? fallback, roomCeiling: await ceiling, readAt: .now)
        known.withLock { $0[app] = read }
    }
}

extension Edge {
    /// Reads the app's budget now (an enter or IM login binding the connection to the app).
    func readRequestBudget(ofApp app: String) async {
        await appLimits.read(ofApp: app)
    }

    /// A1: takes one token from the connection's budget (its app's, `app`), or says how long until one is
    /// there (ms).
    nonisolated func takeRequestToken(_ sessions: ConnectionSessions, app: String?) -> Int64? {
        sessions.takeRequestToken(appLimits.budget(ofApp: app), now: Int64(Date().timeIntervalSince1970 * 1000))
    }
}
