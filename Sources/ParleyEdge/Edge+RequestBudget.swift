import Foundation
import ParleyCluster
import ParleyPlacement

/// SPEC A1: each connection's request budget, all ops together. A connection that has not entered a room
/// or logged in for IM has no app yet and gets the node's default; once it has one, its app's budget
/// (`/v1/app/setBudgets`, kept in the meta group) applies. The app's budget is read at every enter and IM
/// login, and again in the background at most once a second while its connections keep sending, so a change
/// reaches connections already open within about a second, and the request path never waits for it.
struct AppRequestBudget {
    var budget: ConnectionBudget
    var readAt: ContinuousClock.Instant
    var reading = false
}

extension Edge {
    /// How long an app's budget is used before it is read again.
    static let requestBudgetMaxAge = Duration.seconds(1)

    /// The budget for the next request of `c`: its app's (as last read), or the node's default.
    func requestBudget(of c: ClientConnection) -> ConnectionBudget {
        guard let app = c.account?.appKey ?? c.im?.appKey else { return settings.requestBudget }
        guard let known = requestBudgets[app] else {
            refreshRequestBudget(ofApp: app)
            return settings.requestBudget
        }
        if known.readAt.duration(to: .now) > Self.requestBudgetMaxAge { refreshRequestBudget(ofApp: app) }
        return known.budget
    }

    /// Reads the app's budget now (an enter or IM login binding the connection to the app).
    func readRequestBudget(ofApp app: String) async {
        let budget = await cluster.connectionBudget(ofApp: app) ?? settings.requestBudget
        requestBudgets[app] = AppRequestBudget(budget: budget, readAt: .now)
    }

    /// Reads the app's budget in the background, once at a time per app.
    private func refreshRequestBudget(ofApp app: String) {
        if requestBudgets[app]?.reading == true { return }
        requestBudgets[app, default: AppRequestBudget(budget: settings.requestBudget, readAt: .now)].reading = true
        Task { await self.readRequestBudget(ofApp: app) }
    }

    /// A1: takes one token from the connection's budget, or says how long until one is there (ms).
    func takeRequestToken(_ c: ClientConnection) -> Int64? {
        let rule = requestBudget(of: c)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var bucket = c.requests ?? TokenBucket(burst: rule.burst, now: now)
        let wait = bucket.take(rate: rule.requestsPerSecond, burst: rule.burst, now: now)
        connections[c.number]?.requests = bucket
        return wait
    }
}
