/// Everything a shard's IM state applies, as one replicated command (docs/im.md): what users and app
/// servers ask (relationships, one-to-one sends, team commands) and what the cluster's relay does (effects
/// from another shard, confirmations of this shard's outbox). The actor and the time come from the log
/// entry (`ImContext`), never from the command.
public enum ImShardCommand: Sendable, Equatable {
    case user(ImCommand)
    /// Applied on the receiver's shard.
    case send(P2PSend)
    case team(teamId: String, TeamCommand)
    /// The relay: effects from shard `from`'s outbox, in its order.
    case effects(from: Int, [OutboxEntry])
    /// Issue 33: the same, screened by the targets' blocklists — what a blocked user starts (a friend request, a
    /// direct add, a team invitation, an application to a team the target manages) stops there. A command of
    /// its own, proposed once every node reads it, so entries written before apply as they always did.
    case screenedEffects(from: Int, [OutboxEntry])
    /// The relay: the targets applied these effects of this shard's outbox.
    case confirm([UInt64])
    /// A read through the log (changes nothing).
    case read(ImRead)
    /// Issue 38: a read receipt of the actor (applied on its shard one-to-one, on the team's shard for a team).
    case markRead(ReadMark)
}

/// What applying an `ImShardCommand` gave.
public enum ImApplied: Sendable, Equatable {
    case user([ImEvent])
    case sent(ImSent)
    case team(TeamOutcome)
    case effects(events: [ImEvent], appliedUpTo: UInt64)
    case confirmed
    case read(ImReadResult)
}

extension ImShardState {
    /// Applies any IM command; on error nothing changed.
    public mutating func apply(_ command: ImShardCommand, context: ImContext) -> Result<ImApplied, ImError> {
        switch command {
        case .user(let c): return apply(c, context: context).map(ImApplied.user)
        case .send(let m): return send(m, context: context).map(ImApplied.sent)
        case .team(let teamId, let c): return apply(c, team: teamId, context: context).map(ImApplied.team)
        case .effects(let source, let entries):
            let (events, upTo) = applyEffects(from: source, entries)
            return .success(.effects(events: events, appliedUpTo: upTo))
        case .screenedEffects(let source, let entries):
            let (events, upTo) = applyEffects(from: source, entries, screened: true)
            return .success(.effects(events: events, appliedUpTo: upTo))
        case .confirm(let seqs):
            confirm(seqs)
            return .success(.confirmed)
        case .read(let r): return read(r, context: context).map(ImApplied.read)
        case .markRead(let mark): return markRead(mark, context: context).map(ImApplied.user)
        }
    }
}
