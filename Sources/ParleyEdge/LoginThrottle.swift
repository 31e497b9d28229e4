/// Slows token guessing (issue 24): after `limit` failed logins within `window` from one remote address,
/// further logins from it are refused at once — the token is not even checked — until the window that began
/// with the first of those failures has passed. After `limit` failures for one account (from anywhere), its
/// logins are refused from every address that has failed for it in the window, and only from those (issue
/// 33: a stranger's five wrong tokens once locked the real user out of the node): a guesser spread over many
/// addresses gets one try per address, the user on an address that never failed gets in. Bounded: at most
/// `maxKeys` keys are remembered (the oldest windows go first when full). A value type the edge actor owns,
/// with time passed in.
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

    /// What a failed login counts against: where it came from, whom it claims to be, and the two together.
    static func keys(remote: String, appKey: String, account: String) -> [String] {
        ["address " + remote, "account " + appKey + "/" + account, "pair " + appKey + "/" + account + " " + remote]
    }

    /// What may hold a login back: its address, and its account when this address failed for that account
    /// within the window.
    func holds(remote: String, appKey: String, account: String, at now: ContinuousClock.Instant) -> [String] {
        let keys = Self.keys(remote: remote, appKey: appKey, account: account)
        guard let pair = failures[keys[2]], now - pair.since < window else { return [keys[0]] }
        return [keys[0], keys[1]]
    }
}
