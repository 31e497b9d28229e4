/// Issue 38: read receipts (seed 001's `sendTeamMessageReceipts` / `refreshTeamMessageReceipts`, NIM's P2P
/// read receipt) and the unread counts they give. A reader marks a conversation read *through* a sequence —
/// a team's log sequence, or, one-to-one, its own log's — and everything up to it counts as read; a mark
/// never moves back, so marks from several devices in any order agree.
/// - Team: each member's position sits in the team's record. A message's readers are the members who were in
///   the team when it was sent (not its sender) whose position reaches it: one reader however many devices.
/// - One-to-one: the reader's position per peer sits in the reader's record (its unread counts), and reaches
///   the peer's record by an effect (the peer learns how far its messages were read: those whose
///   `receiverSeq` is at most that position).
public enum ReadMark: Sendable, Equatable {
    case p2p(peer: String, throughSeq: UInt64)
    case team(teamId: String, throughSeq: UInt64)
}

/// Which conversation a read position is of.
public enum Conversation: Sendable, Equatable {
    case p2p(peer: String)
    case team(teamId: String)
}

/// Who read a team message and who has not.
public struct TeamReceipt: Sendable, Equatable {
    public var seq: UInt64
    public var from: String
    /// Sorted by account.
    public var readers: [String]
    public var unread: [String]
}

/// One of a user's one-to-one conversations, as its log holds it.
public struct ConversationView: Sendable, Equatable {
    public var peer: String
    /// The conversation's newest message in the user's log (sent or received).
    public var last: ImLogItem
    /// The peer's messages after `readThrough`.
    public var unread: Int
    /// The user's own position (its log's sequence).
    public var readThrough: UInt64
    /// The peer's position in its own log: the user's messages whose `receiverSeq` is at most this were read.
    public var peerReadThrough: UInt64
}

/// A team as one of a member's conversations (issue 38 item 4): its newest message, the member's unread count
/// and position.
public struct TeamSummary: Sendable, Equatable {
    public var teamId: String
    /// The team's newest message the log holds (nil when none).
    public var last: TeamLogItem?
    /// Messages of others after the member's position, sent since it joined.
    public var unread: Int
    public var readThrough: UInt64
}

extension ImShardState {
    /// At most this many teams per summaries read (a user's team cap).
    public static let maxSummaryTeams = 500

    /// The actor's summary of each of these teams (on this shard) it is a member of; others are left out.
    func teamSummaries(_ teamIds: [String], of account: String) throws -> [TeamSummary] {
        try check(teamIds.count <= Self.maxSummaryTeams, "at most \(Self.maxSummaryTeams) teams")
        var summaries: [TeamSummary] = []
        for teamId in Set(teamIds).sorted() {
            guard let t = team(teamId), let me = t.members[account] else { continue }
            let last = t.log.lastMessages[""]
            var unread = 0
            for mark in t.log.marks(after: me.readThrough) where mark.isMessage {
                if mark.from != account, mark.time >= me.joinedAt { unread += 1 }
            }
            summaries.append(TeamSummary(teamId: teamId, last: last, unread: unread, readThrough: me.readThrough))
        }
        return summaries
    }

    /// At most this many sequences per receipts read.
    public static let maxReceiptSeqs = 100

    /// Applies a read mark of the context's actor; a mark at or below the current position changes nothing
    /// and tells nobody. The reader's other devices hear it, and so do the senders of team messages it reads
    /// (the peer of a one-to-one conversation hears it through the effect, on its shard).
    public mutating func markRead(_ mark: ReadMark, context: ImContext) -> Result<[ImEvent], ImError> {
        let me = context.actor
        do {
            try checkAccount(me)
            switch mark {
            case .p2p(let peer, let through):
                try checkAccount(peer)
                try check(peer != me, "a conversation with oneself", .oneself)
                var record = user(me)
                let upTo = min(through, record.log.nextSeq - 1)
                guard upTo > (record.readThrough[peer] ?? 0) else { return .success([]) }
                record.readThrough[peer] = upTo
                store(record, for: me)
                queue([ImEffect(target: peer, from: me, change: .peerRead(throughSeq: upTo), at: context.time)])
                return .success([ImEvent(account: me, kind: .read(.p2p(peer: peer), reader: me, throughSeq: upTo))])
            case .team(let teamId, let through):
                guard var team = teams[teamId] else { throw ImError(.noSuchTeam, "no team \(teamId)") }
                guard let member = team.members[me] else { throw ImError(.notMember, "\(me) is not a member of \(teamId)") }
                let upTo = min(through, team.log.nextSeq - 1)
                guard upTo > member.readThrough else { return .success([]) }
                team.members[me]!.readThrough = upTo
                var told: Set<String> = [me]
                for mark in team.log.marks(after: member.readThrough) {
                    guard mark.seq <= upTo else { break }
                    if mark.isMessage, team.members[mark.from] != nil { told.insert(mark.from) }
                }
                teams[teamId] = team
                return .success(told.sorted().map {
                    ImEvent(account: $0, kind: .read(.team(teamId: teamId), reader: me, throughSeq: upTo))
                })
            }
        } catch let error as ImError {
            return .failure(error)
        } catch {
            return .failure(ImError(.badParameter, "\(error)"))
        }
    }

    /// The receipts of a team's messages at `seqs` (sequences that are not messages the log still holds are
    /// left out); members and the app server only.
    func teamReceipts(_ teamId: String, seqs: [UInt64], context: ImContext) throws -> [TeamReceipt] {
        guard let t = team(teamId) else { throw ImError(.noSuchTeam, "no team \(teamId)") }
        guard context.byAppServer || t.members[context.actor] != nil else {
            throw ImError(.notMember, "\(context.actor) is not a member of \(teamId)")
        }
        try check(!seqs.isEmpty && seqs.count <= Self.maxReceiptSeqs, "1 to \(Self.maxReceiptSeqs) sequences")
        var receipts: [TeamReceipt] = []
        for seq in Set(seqs).sorted() {
            guard let mark = t.log.mark(seq: seq), mark.isMessage else { continue }
            var readers: [String] = [], unread: [String] = []
            for account in t.memberList where account != mark.from {
                let member = t.members[account]!
                guard member.joinedAt <= mark.time else { continue }  // joined after it was sent
                if member.readThrough >= seq { readers.append(account) } else { unread.append(account) }
            }
            receipts.append(TeamReceipt(seq: seq, from: mark.from, readers: readers, unread: unread))
        }
        return receipts
    }

    /// The actor's one-to-one conversations its log holds, newest first, with unread counts and both read
    /// positions.
    func conversations(of account: String) -> [ConversationView] {
        let record = user(account)
        var views: [String: ConversationView] = [:]
        // The marks count; the conversation's newest message is kept whole (`lastMessages`) when the item
        // itself left memory (issue 38 item 5).
        for mark in record.log.marks {
            guard let parties = mark.parties else { continue }
            let peer = mark.from == account ? mark.to : mark.from
            guard peer != account, let last = record.log.lastMessage(parties) else { continue }
            let mine = record.readThrough[peer] ?? 0
            var view = views[peer] ?? ConversationView(peer: peer, last: last, unread: 0, readThrough: mine,
                                                       peerReadThrough: record.peerReadThrough[peer] ?? 0)
            if mark.from == peer, mark.seq > mine { view.unread += 1 }
            views[peer] = view
        }
        return views.values.sorted { ($0.last.seq, $0.peer) > ($1.last.seq, $1.peer) }
    }
}
