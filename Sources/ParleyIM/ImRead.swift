/// What a device or an app server reads of the IM state (docs/im.md). Reads go through the shard's log like
/// the rooms' reads do, so a read after a write on any node sees it. The reader is the context's actor: a
/// device reads its own user's log and relationships, and a team it is a member of.
public enum ImRead: Sendable, Equatable {
    /// The actor's conversation log after `after` (the last sequence the device has), at most `limit` items.
    case log(after: UInt64, limit: Int)
    /// The actor's friends (with remark and since when), requests both ways, blocklist, mute list and teams.
    case relations
    /// A team's info, members and its log after `after` (at most `limit` items); members and the app server only.
    case team(teamId: String, after: UInt64, limit: Int)
    /// Issue 38: the same without the member list (a supergroup has thousands): what a device's gap fill reads.
    case teamLog(teamId: String, after: UInt64, limit: Int)
    /// Issue 38: who read a team's messages at these sequences (at most `maxReceiptSeqs`); members and the app server.
    case teamReceipts(teamId: String, seqs: [UInt64])
    /// Issue 38: the actor's one-to-one conversations with unread counts and read positions.
    case conversations
    /// Issue 38 item 4: the actor's summary (newest message, unread count, position) of each of these teams of
    /// this shard (at most `maxSummaryTeams`; teams it is not in are left out).
    case teamSummaries(teamIds: [String])
    /// Issue 38: which of these teams of this shard (at most `maxSummaryTeams`) the actor is a member of, with
    /// each one's type and next sequence — what an edge checks before it delivers a supergroup's events to a
    /// device (the team's events do not name its members).
    case memberships(teamIds: [String])
}

/// What a read answers.
public enum ImReadResult: Sendable, Equatable {
    /// Items in sequence order; `nextSeq`: the sequence the log's next item will have (a device is in sync
    /// when it holds everything before it); `firstSeq`: the oldest the log still keeps (a device further
    /// behind is answered `historyGone` and continues from here).
    case log(items: [ImLogItem], nextSeq: UInt64, firstSeq: UInt64)
    case relations(ImRelations)
    case team(TeamView)
    case teamReceipts([TeamReceipt])
    /// The one-to-one conversations (from the user's shard) and, filled by the cluster from the teams'
    /// shards, the user's teams (newest message first).
    case conversations([ConversationView], teams: [TeamSummary])
    case teamSummaries([TeamSummary])
    case memberships([TeamMembership])
}

/// A team the reader is a member of, as of `nextSeq` (the sequence the team's next item will have).
public struct TeamMembership: Sendable, Equatable {
    public var teamId: String
    public var type: TeamType
    public var nextSeq: UInt64

    public init(teamId: String, type: TeamType, nextSeq: UInt64) {
        self.teamId = teamId
        self.type = type
        self.nextSeq = nextSeq
    }
}

public struct ImRelations: Sendable, Equatable {
    public struct Friend: Sendable, Equatable {
        public var account: String
        public var since: Int64
        public var remark: String
    }

    public struct Request: Sendable, Equatable {
        public var account: String
        public var message: String
        public var at: Int64
    }

    public var friends: [Friend]
    public var incoming: [Request]
    public var outgoing: [Request]
    public var blocked: [String]
    public var muted: [String]
    public var teams: [String]
}

public struct TeamView: Sendable, Equatable {
    public struct Member: Sendable, Equatable {
        public var account: String
        public var member: TeamMember
    }

    public var teamId: String
    public var info: TeamInfo
    public var owner: String
    /// Sorted by account.
    public var members: [Member]
    public var items: [TeamLogItem]
    public var nextSeq: UInt64
}

extension ImShardState {
    /// Answers a read; changes nothing.
    public func read(_ read: ImRead, context: ImContext) -> Result<ImReadResult, ImError> {
        do {
            try checkAccount(context.actor)
            switch read {
            case .log(let after, let limit):
                let record = user(context.actor)
                let items = try record.log.after(after, limit: limit, limits: limits).get()
                return .success(.log(items: items, nextSeq: record.log.nextSeq, firstSeq: record.log.droppedThroughSeq + 1))
            case .relations:
                let u = user(context.actor)
                func requests(_ d: [String: FriendRequest]) -> [ImRelations.Request] {
                    d.keys.sorted().map { ImRelations.Request(account: $0, message: d[$0]!.message, at: d[$0]!.at) }
                }
                return .success(.relations(ImRelations(
                    friends: u.friendList.map { ImRelations.Friend(account: $0, since: u.friends[$0]!, remark: u.remarks[$0] ?? "") },
                    incoming: requests(u.incoming), outgoing: requests(u.outgoing),
                    blocked: u.blocklist, muted: u.muteList, teams: u.teams.sorted())))
            case .team(let teamId, let after, let limit), .teamLog(let teamId, let after, let limit):
                let withMembers = if case .team = read { true } else { false }
                guard let t = team(teamId) else { throw ImError(.noSuchTeam, "no team \(teamId)") }
                guard context.byAppServer || t.members[context.actor] != nil else {
                    throw ImError(.notMember, "\(context.actor) is not a member of \(teamId)")
                }
                let items = try t.log.after(after, limit: limit, limits: limits).get()
                return .success(.team(TeamView(teamId: teamId, info: t.info, owner: t.owner,
                                               members: withMembers ? t.memberList.map { TeamView.Member(account: $0, member: t.members[$0]!) } : [],
                                               items: items, nextSeq: t.log.nextSeq)))
            case .teamReceipts(let teamId, let seqs):
                return .success(.teamReceipts(try teamReceipts(teamId, seqs: seqs, context: context)))
            case .conversations:
                return .success(.conversations(conversations(of: context.actor), teams: []))
            case .teamSummaries(let teamIds):
                return .success(.teamSummaries(try teamSummaries(teamIds, of: context.actor)))
            case .memberships(let teamIds):
                try check(teamIds.count <= Self.maxSummaryTeams, "at most \(Self.maxSummaryTeams) teams")
                return .success(.memberships(Set(teamIds).sorted().compactMap { teamId in
                    guard let t = team(teamId), t.members[context.actor] != nil else { return nil }
                    return TeamMembership(teamId: teamId, type: t.info.type, nextSeq: t.log.nextSeq)
                }))
            }
        } catch let error as ImError {
            return .failure(error)
        } catch {
            return .failure(ImError(.badParameter, "\(error)"))
        }
    }
}
