/// Notices shard replicas on this node that have had no leader for longer than a few election timeouts —
/// what a node sees when it cannot reach its peers (a firewall, a wrong secret, a socket option only root
/// may set) — so the node can say so in its log instead of waiting in silence. Fed once a second by the
/// node with the leaderless shards it holds; says when to warn (at once past `patience`, then once per
/// `repeatEvery` while it lasts) and when every shard has a leader again.
struct ElectionWatch {
    enum Finding: Equatable {
        /// `shards` replicas have had no leader for at least `for` (the longest of them).
        case stuck(shards: Int, of: Int, for: Duration)
        /// Every shard has a leader again after a warning.
        case recovered(after: Duration)
    }

    let patience: Duration
    let repeatEvery: Duration
    private var leaderlessSince: [Int: ContinuousClock.Instant] = [:]
    private var warnedAt: ContinuousClock.Instant?
    private var troubleStart: ContinuousClock.Instant?

    init(patience: Duration, repeatEvery: Duration = .seconds(30)) {
        self.patience = patience
        self.repeatEvery = repeatEvery
    }

    /// `leaderless`: the shards held here that know no leader now, out of `hosted`.
    mutating func observe(leaderless: Set<Int>, hosted: Int, at now: ContinuousClock.Instant) -> Finding? {
        leaderlessSince = leaderlessSince.filter { leaderless.contains($0.key) }
        for shard in leaderless where leaderlessSince[shard] == nil { leaderlessSince[shard] = now }
        guard let oldest = leaderlessSince.values.min() else {
            defer { warnedAt = nil; troubleStart = nil }
            if warnedAt != nil, let start = troubleStart { return .recovered(after: now - start) }
            return nil
        }
        if troubleStart == nil || oldest < troubleStart! { troubleStart = oldest }
        let stuck = leaderlessSince.values.filter { now - $0 >= patience }.count
        guard stuck > 0 else { return nil }
        if let warnedAt, now - warnedAt < repeatEvery { return nil }
        warnedAt = now
        return .stuck(shards: stuck, of: hosted, for: now - oldest)
    }
}
