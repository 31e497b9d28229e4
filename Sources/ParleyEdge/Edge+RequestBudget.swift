import Foundation
import ParleyCluster
import ParleyPlacement
import Synchronization

/// SPEC A1: each connection's request budget, all ops together. A connection that has not entered a room
/// or logged in for IM has no app yet and gets the node's default; once it has one, its app's budget
/// (`/v1/app/setBudgets`, kept in the meta group) applies. The app's budget is read at every enter and IM
/// login, and again in the background at most once a second while its connections keep sending, so a change
/// reaches connections already open within about a second, and the request path never waits for it.
///
/// Shared by the edge and the connections' event loops (which charge room commands themselves, issue 35).
final class AppRequestBudgets: Sendable {
    private struct Known {
        var budget: ConnectionBudget
        var readAt: ContinuousClock.Instant
        var reading = false
    }

    /// How long an app's budget is used before it is read again.
    static let maxAge = Duration.seconds(1)

    private let cluster: any EdgeCluster
    private let fallback: ConnectionBudget
    private let known = Mutex<[String: Known]>([:])

    init(cluster: any EdgeCluster, fallback: ConnectionBudget) {
        self.cluster = cluster
        self.fallback = fallback
    }

    /// The budget for the next request of a connection of `app` (nil: no app yet): the app's as last read, or
    /// the node's default. A budget older than `maxAge` is read again in the background, once at a time.
    func budget(ofApp app: String?) -> ConnectionBudget {
        guard let app else { return fallback }
        let (budget, refresh) = known.withLock { all -> (ConnectionBudget, Bool) in
            guard var entry = all[app] else {
                all[app] = Known(budget: fallback, readAt: .now, reading: true)
                return (fallback, true)
            }
            let refresh = !entry.reading && entry.readAt.duration(to: .now) > Self.maxAge
            if refresh {
                entry.reading = true
                all[app] = entry
            }
            return (entry.budget, refresh)
        }
        if refresh { Task { await self.read(ofApp: app) } }
        return budget
    }

    /// Reads the app's budget now (an enter or IM login binding a connection to the app).
    func read(ofApp app: String) async {
        let budget = await cluster.connectionBudget(ofApp: app) ?? fallback
        known.withLock { $0[app] = Known(budget: budget, readAt: .now) }
    }
}

extension Edge {
    /// Reads the app's budget now (an enter or IM login binding the connection to the app).
    func readRequestBudget(ofApp app: String) async {
        await requestBudgets.read(ofApp: app)
    }

    /// A1: takes one token from the connection's budget (its app's, `app`), or says how long until one is
    /// there (ms).
    nonisolated func takeRequestToken(_ sessions: ConnectionSessions, app: String?) -> Int64? {
        sessions.takeRequestToken(requestBudgets.budget(ofApp: app), now: Int64(Date().timeIntervalSince1970 * 1000))
    }
}
