import ParleyIM

/// Two or more shards of IM state with the relay between them done by hand, in order, as the cluster's
/// relay will: each shard's outbox goes to its targets' shards, which answer what they applied, and the
/// source confirms it.
struct ImWorld {
    var shards: [ImShardState]
    var time: Int64 = 1_000
    /// Everything the devices heard, in order.
    var heard: [ImEvent] = []
    /// Relay `screenedEffects` (issue 33: blocklists stop what a blocked user starts), as the cluster's relay
    /// does once every node reads it; false relays plain `effects`, as before.
    var screens = true

    init(shards: Int = 2, limits: ImLimits = ImLimits()) {
        self.shards = (0..<shards).map { _ in ImShardState(limits: limits) }
    }

    /// A fixed spread of accounts over the shards (the real map hashes; any function will do here): by the
    /// first letter, so "amy" and "bea" share shard 0 and "tom" is on the last one.
    func shard(of account: String) -> Int {
        min(shards.count - 1, max(0, Int(account.utf8.first ?? 97) - 97) * shards.count / 26)
    }

    @discardableResult
    mutating func run(_ actor: String, _ command: ImCommand, relay: Bool = true) -> Result<[ImEvent], ImError> {
        time += 10
        let s = shard(of: actor)
        let result = shards[s].apply(command, context: ImContext(actor: actor, time: time))
        if case .success(let events) = result { heard += events }
        if relay { self.relay() }
        return result
    }

    /// Delivers every outbox to its targets' shards and confirms, until nothing is left.
    mutating func relay() {
        for source in shards.indices {
            let entries = shards[source].outbox
            for target in shards.indices {
                let mine = entries.filter { shard(of: $0.effect.target) == target }
                guard !mine.isEmpty else { continue }
                let (events, upTo) = shards[target].applyEffects(from: source, mine, screened: screens)
                heard += events
                shards[source].confirm(mine.filter { $0.seq <= upTo }.map(\.seq))
            }
        }
    }

    func user(_ account: String) -> UserRecord { shards[shard(of: account)].user(account) }

    /// The FriendAdd notifications `account`'s devices heard, with their sequence.
    func notifications(of account: String) -> [(seq: UInt64, kind: ImLogItem.Kind)] {
        heard.filter { $0.account == account }.compactMap { event in
            if case .item(let item) = event.kind, case .friendNotification = item.kind { (item.seq, item.kind) } else { nil }
        }
    }

    /// The conversation items (messages, copies, notifications) `account`'s devices heard.
    func items(of account: String) -> [ImLogItem] {
        heard.filter { $0.account == account }.compactMap { if case .item(let item) = $0.kind { item } else { nil } }
    }

    /// Team events the devices of the team's members (or `alsoTo`) heard.
    var teamHeard: [TeamEvent] = []

    /// A team command from `actor` (the app server's when `server`), applied on the team's shard, then relayed.
    @discardableResult
    mutating func team(_ actor: String, _ teamId: String, _ command: TeamCommand, server: Bool = false) -> Result<TeamOutcome, ImError> {
        time += 10
        let result = shards[shard(of: teamId)].apply(command, team: teamId, context: ImContext(actor: actor, time: time, byAppServer: server))
        if case .success(let outcome) = result { teamHeard += outcome.events }
        relay()
        return result
    }

    func teamRecord(_ teamId: String) -> TeamRecord? { shards[shard(of: teamId)].team(teamId) }

    /// The notifications of a team's log, in order.
    func teamNotes(_ teamId: String) -> [TeamNotification] {
        teamHeard.filter { $0.teamId == teamId }.compactMap { if case .notification(let n) = $0.item.kind { n } else { nil } }
    }

    /// A one-to-one message from `actor`, applied on the receiver's shard, then relayed.
    @discardableResult
    mutating func send(_ actor: String, _ m: P2PSend, relay: Bool = true) -> Result<ImSent, ImError> {
        time += 10
        let result = shards[shard(of: m.to)].send(m, context: ImContext(actor: actor, time: time))
        if case .success(let sent) = result { heard += sent.events }
        if relay { self.relay() }
        return result
    }

    func friendChanges(of account: String) -> [ImEvent.Kind] {
        heard.filter { $0.account == account }.map(\.kind).filter { if case .friendChanged = $0 { true } else { false } }
    }
}
