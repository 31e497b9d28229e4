/// The IM state of one shard's users (docs/im.md): their relationship records, the effects this shard
/// produced for users anywhere (the outbox, until confirmed), and the highest effect applied from each other
/// shard. Deterministic: time comes from the context or the effect, nothing iterates an unordered collection
/// in a way that reaches the state, events or effects.
public struct ImShardState: Sendable, Equatable {
    public let limits: ImLimits
    public internal(set) var users: [String: UserRecord] = [:]
    /// The teams whose id maps to this shard.
    public internal(set) var teams: [String: TeamRecord] = [:]
    /// Effects produced here, in sequence order, until the relay confirms their target applied them.
    public internal(set) var outbox: [OutboxEntry] = []
    public internal(set) var nextEffectSeq: UInt64 = 1
    /// Source shard → the highest effect sequence applied from it (a resent relay changes nothing).
    public internal(set) var appliedFrom: [Int: UInt64] = [:]
    /// SPEC D1 (issue 38 item 5): the bytes all logs' items in memory may hold together (0: no bound but each
    /// log's count and retention), replicated (`setLogWindow`); and what is derived of the windows.
    public internal(set) var logWindowBytes = 0
    var windows = LogWindows()

    public init(limits: ImLimits = ImLimits()) { self.limits = limits }

    public func user(_ account: String) -> UserRecord { users[account] ?? UserRecord() }

    /// Nothing was ever applied that left a trace (a shard whose users and teams never used IM).
    public var isEmpty: Bool {
        users.isEmpty && teams.isEmpty && outbox.isEmpty && nextEffectSeq == 1 && appliedFrom.isEmpty
    }

    /// What the operator's devices hear, with the effects for other users queued in the outbox; on error
    /// nothing changed.
    public mutating func apply(_ command: ImCommand, context: ImContext) -> Result<[ImEvent], ImError> {
        let me = context.actor
        var record = user(me)
        var events: [ImEvent] = []
        var effects: [ImEffect] = []
        do {
            try checkAccount(me)
            switch command {
            case .friend(let operation, let target, let message):
                try checkOther(target, of: me)
                try check(message.utf8.count <= limits.maxRequestMessageBytes, "message over \(limits.maxRequestMessageBytes) bytes")
                try befriendOperation(operation, target: target, message: message, record: &record, context: context,
                                      events: &events, effects: &effects)
            case .deleteFriend(let target, let removeRemark):
                try checkOther(target, of: me)
                guard record.friends.removeValue(forKey: target) != nil else { throw ImError(.notFriend, "\(target) is not a friend") }
                if removeRemark { record.remarks[target] = nil }
                events.append(ImEvent(account: me, kind: .friendChanged(friend: target, isFriend: false)))
                effects.append(ImEffect(target: target, from: me, change: .unfriendedBy, at: context.time))
            case .updateRemark(let target, let remark):
                try checkOther(target, of: me)
                try check(remark.utf8.count <= limits.maxRemarkBytes, "remark over \(limits.maxRemarkBytes) bytes")
                guard record.friends[target] != nil else { throw ImError(.notFriend, "\(target) is not a friend") }
                record.remarks[target] = remark.isEmpty ? nil : remark
                events.append(ImEvent(account: me, kind: .friendChanged(friend: target, isFriend: true)))
            case .setBlocked(let target, let on):
                try checkOther(target, of: me)
                if try toggle(&record.blocked, target, on, limit: limits.maxBlocked) {
                    events.append(ImEvent(account: me, kind: .blocklistChanged))
                }
            case .setMuted(let target, let on):
                try checkOther(target, of: me)
                if try toggle(&record.muted, target, on, limit: limits.maxMuted) {
                    events.append(ImEvent(account: me, kind: .muteListChanged))
                }
            }
        } catch let error as ImError {
            return .failure(error)
        } catch {
            return .failure(ImError(.badParameter, "\(error)"))
        }
        store(record, for: me)
        for effect in effects {
            outbox.append(OutboxEntry(seq: nextEffectSeq, effect: effect))
            nextEffectSeq += 1
        }
        return .success(events)
    }

    private func befriendOperation(_ operation: FriendOperation, target: String, message: String, record: inout UserRecord,
                                   context: ImContext, events: inout [ImEvent], effects: inout [ImEffect]) throws {
        let me = context.actor
        switch operation {
        case .add, .request:
            guard record.friends[target] == nil else { throw ImError(.alreadyFriends, "\(target) is a friend already") }
            if operation == .request {
                // A second request replaces the first (its message, its time); new ones are capped like friends.
                if record.outgoing[target] == nil {
                    try check(record.outgoing.count < limits.maxFriends, "\(limits.maxFriends) requests waiting", .limitExceeded)
                }
                record.outgoing[target] = FriendRequest(message: message, at: context.time)
                effects.append(ImEffect(target: target, from: me, change: .requestedBy(message: message), at: context.time))
                return
            }
            try check(record.friends.count < limits.maxFriends, "\(limits.maxFriends) friends", .limitExceeded)
            record.friends[target] = context.time
            record.incoming[target] = nil
            record.outgoing[target] = nil
            events.append(ImEvent(account: me, kind: .friendChanged(friend: target, isFriend: true)))
            effects.append(ImEffect(target: target, from: me, change: .befriendedBy, at: context.time))
        case .verify, .reject:
            guard let request = record.incoming[target], context.time - request.at < limits.requestLifetimeMillis else {
                throw ImError(.noRequest, "no friend request from \(target)")
            }
            record.incoming[target] = nil
            if operation == .reject {
                effects.append(ImEffect(target: target, from: me, change: .rejectedBy, at: context.time))
                return
            }
            if record.friends[target] == nil {
                try check(record.friends.count < limits.maxFriends, "\(limits.maxFriends) friends", .limitExceeded)
                record.friends[target] = context.time
            }
            record.outgoing[target] = nil
            events.append(ImEvent(account: me, kind: .friendChanged(friend: target, isFriend: true)))
            effects.append(ImEffect(target: target, from: me, change: .acceptedBy, at: context.time))
        }
    }

    /// Applies the effects relayed from shard `source`, in order, skipping those applied before (by sequence);
    /// returns what the targets' devices hear and the highest sequence now applied from `source`. `screened`
    /// (issue 33, seed 004's blocklist): what a user the target blocked asks for — a friend request, a team
    /// invitation, an application to a team the target manages — is consumed and changes nothing; a direct
    /// add applies without its notification (the three relationships are independent, and friendship stays
    /// symmetric); answers to the target's own requests arrive as always.
    public mutating func applyEffects(from source: Int, _ entries: [OutboxEntry], screened: Bool = false)
        -> (events: [ImEvent], appliedUpTo: UInt64) {
        var events: [ImEvent] = []
        var applied = appliedFrom[source] ?? 0
        for entry in entries where entry.seq > applied {
            applied = entry.seq
            let e = entry.effect
            guard (try? checkAccount(e.target)) != nil, (try? checkAccount(e.from)) != nil else { continue }
            switch e.change {
            case .joinedTeam, .leftTeam, .teamNotice: break
            default: guard e.target != e.from else { continue }  // friends and copies are between two users
            }
            let fromBlocked = screened && users[e.target]?.blocked.contains(e.from) == true
            if fromBlocked, Self.isUnsolicited(e.change) { continue }
            // Out of the dictionary while it changes: appending to a log held twice would copy the log.
            var record = users.removeValue(forKey: e.target) ?? UserRecord()
            func notify(_ operation: FriendOperation, _ message: String = "") {
                if fromBlocked, e.change == .befriendedBy { return }
                let item = record.log.append(.friendNotification(source: e.from, target: e.target, operation: operation, message: message),
                                         at: e.at, limits: limits)
                events.append(ImEvent(account: e.target, kind: .item(item)))
            }
            switch e.change {
            case .befriendedBy, .acceptedBy:
                // Symmetric friendship: the target's list follows even when full (the operator's side decided).
                let wasFriend = record.friends[e.from] != nil
                if !wasFriend { record.friends[e.from] = e.at }
                record.incoming[e.from] = nil
                record.outgoing[e.from] = nil
                notify(e.change == .befriendedBy ? .add : .verify)
                if !wasFriend { events.append(ImEvent(account: e.target, kind: .friendChanged(friend: e.from, isFriend: true))) }
            case .requestedBy(let message):
                record.incoming[e.from] = FriendRequest(message: message, at: e.at)
                notify(.request, message)
            case .rejectedBy:
                record.outgoing[e.from] = nil
                notify(.reject)
            case .unfriendedBy:
                if record.friends.removeValue(forKey: e.from) != nil {
                    events.append(ImEvent(account: e.target, kind: .friendChanged(friend: e.from, isFriend: false)))
                }
            case .sentCopy(let message):
                guard message.from == e.target, message.to == e.from else { break }
                let item = record.log.append(.message(message, alert: false), at: e.at, limits: limits)
                events.append(ImEvent(account: e.target, kind: .item(item)))
            case .joinedTeam(let teamId, let fromSeq):
                if record.teams.insert(teamId).inserted {
                    events.append(ImEvent(account: e.target, kind: .teamMembership(teamId: teamId, isMember: true, fromSeq: fromSeq)))
                }
            case .leftTeam(let teamId):
                if record.teams.remove(teamId) != nil {
                    events.append(ImEvent(account: e.target, kind: .teamMembership(teamId: teamId, isMember: false, fromSeq: 0)))
                }
            case .teamNotice(let notice, let teamId, let message):
                let item = record.log.append(.teamNotice(notice, teamId: teamId, source: e.from, message: message), at: e.at, limits: limits)
                events.append(ImEvent(account: e.target, kind: .item(item)))
            case .peerRead(let through):
                guard through > (record.peerReadThrough[e.from] ?? 0) else { break }
                record.peerReadThrough[e.from] = through
                events.append(ImEvent(account: e.target, kind: .read(.p2p(peer: e.from), reader: e.from, throughSeq: through)))
            }
            store(record, for: e.target)
        }
        appliedFrom[source] = applied
        return (events, applied)
    }

    /// What a user asks of another without being asked: a blocklist stops it. Answers to the target's own
    /// requests (an acceptance, a rejection), friendship changes, message copies and team membership are not.
    static func isUnsolicited(_ change: ImEffect.Change) -> Bool {
        switch change {
        case .requestedBy: return true
        case .teamNotice(let notice, _, _): return notice == .invite || notice == .apply
        case .befriendedBy, .acceptedBy, .rejectedBy, .unfriendedBy, .sentCopy, .joinedTeam, .leftTeam, .peerRead: return false
        }
    }

    /// A one-to-one message from the context's actor, applied on the receiver's shard: refused when the
    /// receiver blocked the sender (14201, stored nowhere); a resend (same sender and clientMessageId, still in
    /// the receiver's log) answers the first send's place and changes nothing. The receiver's devices get it
    /// (without an alert when the sender is on its do-not-disturb list); the sender's log gets a copy.
    public mutating func send(_ m: P2PSend, context: ImContext) -> Result<ImSent, ImError> {
        let from = context.actor
        do {
            try checkAccount(from)
            try checkAccount(m.to)
            try check(m.clientMessageId.utf8.count <= limits.maxClientMessageIdBytes, "clientMessageId over \(limits.maxClientMessageIdBytes) bytes")
            try check(!m.body.isEmpty && m.body.utf8.count <= limits.maxBodyBytes, "a body is 1 to \(limits.maxBodyBytes) bytes")
            try check(m.ext.utf8.count <= limits.maxExtBytes, "ext over \(limits.maxExtBytes) bytes")
            try check(!m.type.isEmpty && m.type.utf8.count <= limits.maxTypeBytes, "a type is 1 to \(limits.maxTypeBytes) bytes")
        } catch let error as ImError {
            return .failure(error)
        } catch {
            return .failure(ImError(.badParameter, "\(error)"))
        }
        if users[m.to]?.blocked.contains(from) == true { return .failure(ImError(.blocked, "\(m.to) blocked \(from)")) }
        let message = P2PMessage(from: from, to: m.to, clientMessageId: m.clientMessageId, type: m.type, body: m.body,
                                 ext: m.ext, receiverSeq: 0)
        if let key = ImLogKind.message(message, alert: true).resendKey, let first = users[m.to]?.log.resent(key) {
            return .success(ImSent(seq: first.seq, time: first.time, events: []))
        }
        // Out of the dictionary while it changes: appending to a log held twice would copy the log.
        var record = users.removeValue(forKey: m.to) ?? UserRecord()
        let item = record.receive(message, alert: !record.muted.contains(from), at: context.time, limits: limits)
        store(record, for: m.to)
        if from != m.to, case .message(let stored, _) = item.kind {
            outbox.append(OutboxEntry(seq: nextEffectSeq, effect: ImEffect(target: from, from: m.to, change: .sentCopy(stored),
                                                                           at: context.time)))
            nextEffectSeq += 1
        }
        return .success(ImSent(seq: item.seq, time: item.time, events: [ImEvent(account: m.to, kind: .item(item))]))
    }

    /// What a device of `account` syncs after `seq` (its last one), oldest first, at most `limit`;
    /// `historyGone` when the log no longer holds the item right after `seq`.
    public func items(of account: String, after seq: UInt64, limit: Int) -> Result<[ImLogItem], ImError> {
        user(account).log.after(seq, limit: limit, limits: limits)
    }

    /// The relay's confirmation: these effects were applied by their targets' shards.
    public mutating func confirm(_ seqs: [UInt64]) {
        let done = Set(seqs)
        outbox.removeAll { done.contains($0.seq) }
    }

    /// Whether `receiver` takes a one-to-one message from `sender` (not on its blocklist), and with an
    /// alert (sender not on its do-not-disturb list).
    public func delivery(from sender: String, to receiver: String) -> Result<Bool, ImError> {
        let record = user(receiver)
        if record.blocked.contains(sender) { return .failure(ImError(.blocked, "\(receiver) blocked \(sender)")) }
        return .success(!record.muted.contains(sender))
    }

    // MARK: checks

    func checkAccount(_ account: String) throws {
        try check(!account.isEmpty && account.utf8.count <= limits.maxAccountBytes,
                  "an account id is 1 to \(limits.maxAccountBytes) bytes")
    }

    private func checkOther(_ target: String, of me: String) throws {
        try checkAccount(target)
        try check(target != me, "\(me) cannot be its own friend, blocked or muted", .oneself)
    }

    func check(_ condition: Bool, _ why: String, _ code: ImErrorCode = .badParameter) throws {
        if !condition { throw ImError(code, why) }
    }

    /// Adds or removes `target`; true if the set changed. Adding past `limit` is refused.
    private func toggle(_ set: inout Set<String>, _ target: String, _ on: Bool, limit: Int) throws -> Bool {
        if on {
            guard !set.contains(target) else { return false }
            try check(set.count < limit, "list full (\(limit))", .limitExceeded)
            set.insert(target)
            return true
        }
        return set.remove(target) != nil
    }

    mutating func store(_ record: UserRecord, for account: String) {
        users[account] = record.isEmpty ? nil : record
    }
}
