/// Slows token guessing (issue 24): after `limit` failed logins within `window` from one remote address or
/// for one account, further logins from it or for it are refused at once — the token is not even checked —
/// until the window that began with the first of those failures has passed. A guesser gets `limit` tries a
/// window per address instead of ~1,700 a second; the cost is that a real user whose account is being
/// guessed waits out the window too. Bounded: at most `maxKeys` keys are remembered (the oldest windows go
/// first when full). A value type the edge actor owns, with time passed in.
struct LoginThrottle {
    let limit: Int
    let window: Duration
    let maxKeys: Int
    private var failures: [String: (count: Int, since: ContinuousClock.Instant)] = [:]

    init(limit: Int = 5, window: Duration = .seconds(60), maxKeys: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.maxKeys = maxKeys
    }

    /// How long until every one of `keys` may try again (nil: now).
    mutating func retryAfter(_ keys: [String], at now: ContinuousClock.Instant) -> Duration? {
        var wait: Duration?
        for key in keys {
            guard let f = failures[key] else { continue }
            let age = now - f.since
            if age >= window {
                failures[key] = nil
            } else if f.count >= limit {
                wait = max(wait ?? .zero, window - age)
            }
        }
        return wait
    }

    /// A login for `keys` failed.
    mutating func failed(_ keys: [String], at now: ContinuousClock.Instant) {
        for key in keys {
            if let f = failures[key], now - f.since < window {
                failures[key] = (f.count + 1, f.since)
                continue
            }
            if failures.count >= maxKeys {
                failures = failures.filter { now - $0.value.since < window }
                if failures.count >= maxKeys, let oldest = failures.min(by: { $0.value.since < $1.value.since })?.key {
                    failures[oldest] = nil
                }
            }
            failures[key] = (1, now)
        }
    }

    /// The keys of one login: where it came from and whom it claims to be.
    static func keys(remote: String, appKey: String, account: String) -> [String] {
        ["address " + remote, "account " + appKey + "/" + account]
    }
}
