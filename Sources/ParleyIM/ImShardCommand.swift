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
    /// Issue 38 item 5 (SPEC D1): the byte bound of the shard's IM logs' items in memory (0: none); the
    /// cluster's alone, proposed by the shard's leader once every node reads it.
    case setLogWindow(bytes: Int)
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
        let owners = logOwners(of: command, actor: context.actor)
        guard !owners.isEmpty else { return applyToLogs(command, context: context) }
        let before = owners.map(logPoint)
        let result = applyToLogs(command, context: context)
        settleLogs(owners, before: before)
        return result
    }

    private mutating func applyToLogs(_ command: ImShardCommand, context: ImContext) -> Result<ImApplied, ImError> {
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
        case .setLogWindow(let bytes):
            guard context.byAppServer else { return .failure(ImError(.noPermission, "only the cluster sets the log window")) }
            do { try setLogWindow(bytes: bytes) } catch let e as ImError { return .failure(e) } catch { return .failure(ImError(.badParameter, "\(error)")) }
            return .success(.confirmed)
        }
    }
}
