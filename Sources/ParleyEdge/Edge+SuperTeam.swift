import ParleyIM
import ParleyPlacement
import ParleyShardState

/// Issue 38: what an edge knows of a device's membership of a team it follows. An advanced team's events name
/// its members, so this is not needed for them; a supergroup's do not (it has thousands), so its events reach
/// a following device only once the team's shard said the user is a member, and from the sequence it said so.
enum TeamFollowCheck: Equatable {
    /// Not asked yet (a follow made before every node read supergroups), or the last ask failed: the next
    /// supergroup event asks again. `leftAt` as for `asking`.
    case unchecked(leftAt: UInt64?)
    /// Asked (check number `check`); `leftAt`: the latest departure of the user the team's feed showed since.
    case asking(check: UInt64, leftAt: UInt64?)
    /// A member as of `since`, the team's next sequence when the shard answered: its events from there on.
    case member(since: UInt64)
}

/// A team item's two frames — alerting and silent (team DND) — each encoded once, when a device first needs
/// it, for all the devices of this edge it reaches.
final class TeamFrames {
    private let event: TeamEvent
    private let silent: Set<String>
    private lazy var alerting = TextFrame(EventFrame.team(event, alert: true))
    private lazy var quiet = TextFrame(EventFrame.team(event, alert: false))

    init(_ e: TeamEvent) {
        event = e
        silent = Set(e.noAlert)
    }

    func `for`(_ account: String) -> TextFrame { silent.contains(account) ? quiet : alerting }
}

extension TeamEvent {
    /// A dismiss: the team is gone, so no device follows it any longer.
    var dismisses: Bool {
        if case .notification(let n) = item.kind { n.operation == .dismiss } else { false }
    }
}

extension Edge {
    /// Asks the teams' shards (one read per shard) whether the connection's user is a member of these teams it
    /// follows, and of which type. A team it is not in is no longer followed; one it is in delivers its
    /// supergroup events from the answer's sequence — unless the team's feed showed the user leave at or
    /// after it meanwhile. Nothing is asked before every node reads supergroups (none exists before).
    func checkMemberships(of connection: UInt64, teams: [String]) async {
        guard !teams.isEmpty, await cluster.everyNodeHas(.superTeams) else { return }
        guard let login = connections[connection]?.im else { return }
        var asked: [ShardID: [(team: String, check: UInt64)]] = [:]
        for team in teams.sorted() {
            guard case .unchecked(let leftAt)? = connections[connection]?.im?.checks[team], let shard = login.teams[team] else { continue }
            membershipChecks += 1
            connections[connection]?.im?.checks[team] = .asking(check: membershipChecks, leftAt: leftAt)
            asked[shard, default: []].append((team, membershipChecks))
        }
        guard let c = connections[connection] else { return }
        let identity = login.identity(of: c, edgeId: cluster.edgeId)
        for (shard, list) in asked.sorted(by: { $0.key < $1.key }) {
            let answer = try? await cluster.submitIm(.read(.memberships(teamIds: list.map(\.team))), account: login.scoped,
                                                     shard: shard, actor: .session(identity))
            guard case .success(.read(.memberships(let found)))? = answer else {
                // Unanswered (no quorum, a deadline): the next event of the team asks again.
                for (team, check) in list {
                    guard case .asking(check, let leftAt)? = connections[connection]?.im?.checks[team] else { continue }
                    connections[connection]?.im?.checks[team] = .unchecked(leftAt: leftAt)
                }
                continue
            }
            let since = Dictionary(found.map { ($0.teamId, $0.nextSeq) }, uniquingKeysWith: { a, _ in a })
            for (team, check) in list {
                guard case .asking(check, let leftAt)? = connections[connection]?.im?.checks[team] else { continue }
                if let nextSeq = since[team], leftAt.map({ $0 < nextSeq }) ?? true {
                    connections[connection]?.im?.checks[team] = .member(since: nextSeq)
                } else {
                    unfollow(team: team, connection: connection)
                }
            }
        }
    }

    /// A supergroup's log item: to each following device whose user is a member as of the item, and to the
    /// devices of those it names in `alsoTo` (who just left or were kicked), who then stop following it.
    func deliverSuperTeam(_ e: TeamEvent) {
        let seq = e.item.seq
        let frames = TeamFrames(e)
        var reached: Set<UInt64> = []
        var unchecked: [UInt64] = []
        for n in teamFollowers[e.teamId] ?? [] {
            guard let login = connections[n]?.im else { continue }
            switch login.checks[e.teamId] {
            case .member(let since)? where seq >= since:
                reached.insert(n)
                connections[n]?.send(frames.for(login.scoped))
            case .unchecked?:
                unchecked.append(n)
            default:
                // Asking (the device's SDK fills what it missed from the team's log by sequence), or an item
                // from before the device's membership was known.
                break
            }
        }
        for account in Set(e.alsoTo).sorted() {
            for n in (imSessions[account] ?? []).sorted() where !reached.contains(n) {
                connections[n]?.send(frames.for(account))
            }
            for n in (imSessions[account] ?? []).sorted() { departed(account: account, n, team: e.teamId, at: seq) }
        }
        if e.dismisses { unfollowAll(e.teamId) }
        for n in unchecked {
            Task { await self.checkMemberships(of: n, teams: [e.teamId]) }
        }
    }

    /// The team's feed showed the user leave at `seq`: a device known to be a member since then stops following;
    /// one being asked about remembers it (the answer may predate the departure).
    private func departed(account: String, _ n: UInt64, team: String, at seq: UInt64) {
        switch connections[n]?.im?.checks[team] {
        case .member(let since)? where since <= seq:
            unfollow(team: team, connection: n)
        case .asking(let check, let leftAt)?:
            connections[n]?.im?.checks[team] = .asking(check: check, leftAt: max(leftAt ?? 0, seq))
        case .unchecked(let leftAt)?:
            connections[n]?.im?.checks[team] = .unchecked(leftAt: max(leftAt ?? 0, seq))
        default:
            break  // an old departure, before the membership the shard confirmed
        }
    }

    /// The feed of a team shard skipped events — a departure among them, perhaps: what the edge knew of its
    /// teams' memberships is asked again at once (until the answer nothing of a supergroup is pushed to those
    /// devices; their SDKs fill it from the log).
    func forgetMemberships(onShard shard: ShardID) {
        var ask: [UInt64: [String]] = [:]
        for (team, followers) in teamFollowers {
            for n in followers.sorted() where connections[n]?.im?.teams[team] == shard {
                // An answer on its way may predate the skipped departure: it is not taken (its number no longer
                // matches).
                connections[n]?.im?.checks[team] = .unchecked(leftAt: nil)
                ask[n, default: []].append(team)
            }
        }
        for (n, teams) in ask { Task { await self.checkMemberships(of: n, teams: teams) } }
    }

    /// The team was dismissed: no connection follows it.
    func unfollowAll(_ team: String) {
        for n in (teamFollowers[team] ?? []).sorted() { unfollow(team: team, connection: n) }
    }

    func stopFollowing(_ team: String, _ connection: UInt64) {
        teamFollowers[team]?.remove(connection)
        if teamFollowers[team]?.isEmpty == true { teamFollowers[team] = nil }
    }
}
