import ParleyWire

/// Snapshot and restore of a shard's IM state: versioned, byte-deterministic (every dictionary and set
/// written in sorted order), so two replicas that agree write the same bytes.
extension ImShardState {
    static let snapshotMagic: [UInt8] = [0x50, 0x49, 0x4D, 0x53]  // "PIMS"
    /// Version 2 adds the read positions (issue 38); a state without any writes version 1, byte for byte as
    /// before, so replicas of an older release read the snapshots of a cluster that never used receipts.
    public static let snapshotVersion: UInt8 = 4
    /// Version 3 adds each team's type (issue 38's supergroups), written only while a supergroup exists.
    static let superTeamsVersion: UInt8 = 3
    /// Version 4 adds the logs' window bound and, per log, the marks of every item and each conversation's
    /// newest message (issue 38 item 5): written only while the logs' windows are bounded or some item is out
    /// of memory, so a cluster whose nodes do not all read it never gets it.
    static let logWindowVersion: UInt8 = 4

    /// Whether any read position was ever marked (snapshot version 2 needed).
    var holdsReadPositions: Bool {
        users.values.contains { !$0.readThrough.isEmpty || !$0.peerReadThrough.isEmpty }
            || teams.values.contains { $0.members.values.contains { $0.readThrough > 0 } }
    }

    public func snapshot() -> [UInt8] {
        var w = ByteWriter()
        for b in Self.snapshotMagic { w.write(b) }
        let windowed = logWindowBytes > 0 || holdsItemsOutOfMemory
        let types = windowed || teams.values.contains { $0.info.type != .advanced }
        let receipts = types || holdsReadPositions
        w.write(windowed ? Self.logWindowVersion : types ? Self.superTeamsVersion : receipts ? 2 : 1)
        if windowed { w.write(logWindowBytes) }
        w.write(UInt64(users.count))
        for account in users.keys.sorted() {
            let u = users[account]!
            w.write(account)
            w.write(UInt64(u.friends.count))
            for f in u.friends.keys.sorted() { w.write(f); w.write(u.friends[f]!) }
            w.write(UInt64(u.remarks.count))
            for f in u.remarks.keys.sorted() { w.write(f); w.write(u.remarks[f]!) }
            for requests in [u.incoming, u.outgoing] {
                w.write(UInt64(requests.count))
                for f in requests.keys.sorted() { w.write(f); w.write(requests[f]!.message); w.write(requests[f]!.at) }
            }
            w.write(u.blocked.sorted())
            w.write(u.muted.sorted())
            w.write(u.teams.sorted())
            Self.write(u.log, windowed: windowed, into: &w) { Self.write($0, into: &$1) }
            if receipts {
                for positions in [u.readThrough, u.peerReadThrough] {
                    w.write(UInt64(positions.count))
                    for peer in positions.keys.sorted() { w.write(peer); w.write(positions[peer]!) }
                }
            }
        }
        w.write(UInt64(teams.count))
        for teamId in teams.keys.sorted() {
            w.write(teamId)
            Self.write(teams[teamId]!, windowed: windowed, into: &w)
            if receipts {
                let members = teams[teamId]!.members
                let reading = members.keys.sorted().filter { members[$0]!.readThrough > 0 }
                w.write(UInt64(reading.count))
                for account in reading { w.write(account); w.write(members[account]!.readThrough) }
            }
            if types { w.write(teams[teamId]!.info.type.rawValue) }
        }
        w.write(UInt64(outbox.count))
        for entry in outbox {
            w.write(entry.seq)
            Self.write(entry.effect, into: &w)
        }
        w.write(nextEffectSeq)
        w.write(UInt64(appliedFrom.count))
        for source in appliedFrom.keys.sorted() { w.write(source); w.write(appliedFrom[source]!) }
        return w.bytes
    }

    public init(restoring bytes: [UInt8], limits: ImLimits = ImLimits()) throws(CodecError) {
        var r = ByteReader(bytes)
        for b in Self.snapshotMagic {
            guard try r.readByte() == b else { throw .badMagic }
        }
        let version = try r.readByte()
        guard (1...Self.snapshotVersion).contains(version) else { throw .badVersion(version) }
        let receipts = version >= 2, types = version >= Self.superTeamsVersion, windowed = version >= Self.logWindowVersion
        self.init(limits: limits)
        if windowed { logWindowBytes = try r.readInt() }
        for _ in 0..<(try r.readCount(minimumItemBytes: 8)) {
            let account = try r.readString()
            var u = UserRecord()
            for _ in 0..<(try r.readCount(minimumItemBytes: 2)) { u.friends[try r.readString()] = try r.readInt64() }
            for _ in 0..<(try r.readCount(minimumItemBytes: 2)) { u.remarks[try r.readString()] = try r.readString() }
            for side in 0..<2 {
                for _ in 0..<(try r.readCount(minimumItemBytes: 3)) {
                    let who = try r.readString()
                    let request = FriendRequest(message: try r.readString(), at: try r.readInt64())
                    if side == 0 { u.incoming[who] = request } else { u.outgoing[who] = request }
                }
            }
            u.blocked = Set(try r.readStrings())
            u.muted = Set(try r.readStrings())
            u.teams = Set(try r.readStrings())
            u.log = try Self.readLog(&r, windowed: windowed) { r throws(CodecError) in try Self.readItem(&r) }
            if receipts {
                for _ in 0..<(try r.readCount(minimumItemBytes: 2)) { u.readThrough[try r.readString()] = try r.readUInt64() }
                for _ in 0..<(try r.readCount(minimumItemBytes: 2)) { u.peerReadThrough[try r.readString()] = try r.readUInt64() }
            }
            users[account] = u
        }
        for _ in 0..<(try r.readCount(minimumItemBytes: 8)) {
            let teamId = try r.readString()
            var team = try Self.readTeam(&r, windowed: windowed)
            if receipts {
                for _ in 0..<(try r.readCount(minimumItemBytes: 2)) {
                    let account = try r.readString(), position = try r.readUInt64()
                    guard team.members[account] != nil else { throw .invalidValue("a read position of a non-member") }
                    team.members[account]!.readThrough = position
                }
            }
            if types { team.info.type = try r.readEnum() }
            teams[teamId] = team
        }
        for _ in 0..<(try r.readCount(minimumItemBytes: 4)) {
            outbox.append(OutboxEntry(seq: try r.readUInt64(), effect: try Self.readEffect(&r)))
        }
        nextEffectSeq = try r.readUInt64()
        for _ in 0..<(try r.readCount(minimumItemBytes: 2)) { appliedFrom[try r.readInt()] = try r.readUInt64() }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
        rebuildWindows()
    }

    /// A log: its sequences, then (`windowed`) every item's mark and each conversation's newest message, then
    /// the items in memory (all of them when not `windowed`).
    static func write<K>(_ log: SequencedLog<K>, windowed: Bool, into w: inout ByteWriter,
                         item: (LogEntry<K>, inout ByteWriter) -> Void) {
        w.write(log.nextSeq)
        w.write(log.droppedThroughSeq)
        if windowed {
            w.write(UInt64(log.marks.count))
            for m in log.marks {
                w.write(m.seq); w.write(m.time); w.write(m.isMessage); w.write(m.from); w.write(m.to); w.write(m.resendHash)
            }
            w.write(UInt64(log.lastMessages.count))
            for key in log.lastMessages.keys.sorted() { w.write(key); item(log.lastMessages[key]!, &w) }
        }
        w.write(UInt64(log.entries.count))
        for e in log.entries { item(e, &w) }
    }

    static func readLog<K>(_ r: inout ByteReader, windowed: Bool,
                           item: (inout ByteReader) throws(CodecError) -> LogEntry<K>) throws(CodecError) -> SequencedLog<K> {
        let nextSeq = try r.readUInt64(), droppedThroughSeq = try r.readUInt64()
        var marks: [LogMark] = [], last: [String: LogEntry<K>] = [:]
        if windowed {
            for _ in 0..<(try r.readCount(minimumItemBytes: 6)) {  // varints, a bool, two strings
                let seq = try r.readUInt64(), time = try r.readInt64(), isMessage = try r.readBool()
                marks.append(LogMark(seq: seq, time: time, from: try r.readString(), to: try r.readString(), isMessage: isMessage,
                                     resendHash: try r.readUInt64()))
            }
            for _ in 0..<(try r.readCount(minimumItemBytes: 4)) { last[try r.readString()] = try item(&r) }
        }
        var items: [LogEntry<K>] = []
        for _ in 0..<(try r.readCount(minimumItemBytes: 4)) { items.append(try item(&r)) }
        var log = SequencedLog<K>()
        if windowed {
            guard items.count <= marks.count, items.first.map({ $0.seq == marks[marks.count - items.count].seq }) ?? true else {
                throw .invalidValue("a log's items in memory are not its newest")
            }
            log.restore(marks: marks, entries: items, lastMessages: last, nextSeq: nextSeq, droppedThroughSeq: droppedThroughSeq)
        } else {
            log.restore(entries: items, nextSeq: nextSeq, droppedThroughSeq: droppedThroughSeq)
        }
        return log
    }

    static func write(_ e: ImEffect, into w: inout ByteWriter) {
        w.write(e.target)
        w.write(e.from)
        w.write(e.at)
        switch e.change {
        case .befriendedBy: w.write(UInt8(1))
        case .requestedBy(let message): w.write(UInt8(2)); w.write(message)
        case .acceptedBy: w.write(UInt8(3))
        case .rejectedBy: w.write(UInt8(4))
        case .unfriendedBy: w.write(UInt8(5))
        case .sentCopy(let m): w.write(UInt8(6)); write(m, into: &w)
        case .joinedTeam(let t, let from): w.write(UInt8(7)); w.write(t); w.write(from)
        case .leftTeam(let t): w.write(UInt8(8)); w.write(t)
        case .teamNotice(let notice, let t, let message): w.write(UInt8(9)); w.write(notice.rawValue); w.write(t); w.write(message)
        case .peerRead(let through): w.write(UInt8(10)); w.write(through)
        }
    }

    static func write(_ m: P2PMessage, into w: inout ByteWriter) {
        w.write(m.from); w.write(m.to); w.write(m.clientMessageId); w.write(m.type); w.write(m.body); w.write(m.ext)
        w.write(m.receiverSeq)
    }

    static func readMessage(_ r: inout ByteReader) throws(CodecError) -> P2PMessage {
        P2PMessage(from: try r.readString(), to: try r.readString(), clientMessageId: try r.readString(), type: try r.readString(),
                   body: try r.readString(), ext: try r.readString(), receiverSeq: try r.readUInt64())
    }

    static func write(_ item: ImLogItem, into w: inout ByteWriter) {
        w.write(item.seq)
        w.write(item.time)
        switch item.kind {
        case .message(let m, let alert): w.write(UInt8(1)); write(m, into: &w); w.write(alert)
        case .friendNotification(let source, let target, let operation, let message):
            w.write(UInt8(2)); w.write(source); w.write(target); w.write(operation.rawValue); w.write(message)
        case .teamNotice(let notice, let teamId, let source, let message):
            w.write(UInt8(3)); w.write(notice.rawValue); w.write(teamId); w.write(source); w.write(message)
        }
    }

    static func readItem(_ r: inout ByteReader) throws(CodecError) -> ImLogItem {
        let seq = try r.readUInt64(), time = try r.readInt64()
        switch try r.readByte() {
        case 1:
            let m = try readMessage(&r)
            return ImLogItem(seq: seq, time: time, kind: .message(m, alert: try r.readBool()))
        case 2:
            let source = try r.readString(), target = try r.readString()
            let operation: FriendOperation = try r.readEnum()
            return ImLogItem(seq: seq, time: time, kind: .friendNotification(source: source, target: target, operation: operation,
                                                                            message: try r.readString()))
        case 3:
            let notice: TeamNotice = try r.readEnum()
            return ImLogItem(seq: seq, time: time, kind: .teamNotice(notice, teamId: try r.readString(), source: try r.readString(),
                                                                    message: try r.readString()))
        case let tag: throw .badTag("log item", UInt64(tag))
        }
    }

    static func write(_ i: TeamInfo, into w: inout ByteWriter) {
        w.write(i.name); w.write(i.intro); w.write(i.announcement); w.write(i.avatar)
        w.write(i.joinMode.rawValue); w.write(i.inviteMode.rawValue); w.write(i.beInviteMode.rawValue)
        w.write(i.updateInfoMode.rawValue); w.write(i.muteAll)
    }

    static func readTeamInfo(_ r: inout ByteReader) throws(CodecError) -> TeamInfo {
        var info = TeamInfo(name: try r.readString())
        info.intro = try r.readString(); info.announcement = try r.readString(); info.avatar = try r.readString()
        info.joinMode = try r.readEnum(); info.inviteMode = try r.readEnum(); info.beInviteMode = try r.readEnum()
        info.updateInfoMode = try r.readEnum(); info.muteAll = try r.readBool()
        return info
    }

    static func write(_ account: String, _ m: TeamMember, into w: inout ByteWriter) {
        w.write(account); w.write(m.role.rawValue); w.write(m.muted); w.write(m.notify.rawValue); w.write(m.joinedAt)
    }

    static func readTeamMember(_ r: inout ByteReader) throws(CodecError) -> (String, TeamMember) {
        let account = try r.readString()
        var m = TeamMember(role: try r.readEnum(), joinedAt: 0)
        m.muted = try r.readBool()
        m.notify = try r.readEnum()
        m.joinedAt = try r.readInt64()
        return (account, m)
    }

    static func write(_ item: TeamLogItem, into w: inout ByteWriter) {
        w.write(item.seq); w.write(item.time)
        switch item.kind {
        case .message(let m):
            w.write(UInt8(1)); w.write(m.from); w.write(m.clientMessageId); w.write(m.type); w.write(m.body); w.write(m.ext)
        case .notification(let n):
            w.write(UInt8(2)); w.write(n.operation.rawValue); w.write(n.source); w.write(n.targets); w.write(n.notifyExt)
            w.write(UInt64(n.attachment.count))
            for tag in n.attachment.keys.sorted() { w.write(tag.rawValue); w.write(n.attachment[tag]!) }
        }
    }

    static func readTeamItem(_ r: inout ByteReader) throws(CodecError) -> TeamLogItem {
        let seq = try r.readUInt64(), time = try r.readInt64()
        switch try r.readByte() {
        case 1:
            let m = TeamMessage(from: try r.readString(), clientMessageId: try r.readString(), type: try r.readString(),
                                body: try r.readString(), ext: try r.readString())
            return TeamLogItem(seq: seq, time: time, kind: .message(m))
        case 2:
            let operation: TeamOperation = try r.readEnum()
            let source = try r.readString(), targets = try r.readStrings(), notifyExt = try r.readString()
            var attachment: [TeamUpdateTag: String] = [:]
            for _ in 0..<(try r.readCount(minimumItemBytes: 2)) {
                let tag: TeamUpdateTag = try r.readEnum()
                attachment[tag] = try r.readString()
            }
            return TeamLogItem(seq: seq, time: time, kind: .notification(
                TeamNotification(operation: operation, source: source, targets: targets, notifyExt: notifyExt, attachment: attachment)))
        case let tag: throw .badTag("team log item", UInt64(tag))
        }
    }

    static func write(_ t: TeamRecord, windowed: Bool, into w: inout ByteWriter) {
        write(t.info, into: &w)
        w.write(t.owner)
        w.write(UInt64(t.members.count))
        for account in t.members.keys.sorted() { write(account, t.members[account]!, into: &w) }
        w.write(UInt64(t.invitations.count))
        for account in t.invitations.keys.sorted() {
            let inv = t.invitations[account]!
            w.write(account); w.write(inv.inviter); w.write(inv.postscript); w.write(inv.at)
        }
        w.write(UInt64(t.applications.count))
        for account in t.applications.keys.sorted() {
            w.write(account); w.write(t.applications[account]!.message); w.write(t.applications[account]!.at)
        }
        write(t.log, windowed: windowed, into: &w) { write($0, into: &$1) }
    }

    static func readTeam(_ r: inout ByteReader, windowed: Bool) throws(CodecError) -> TeamRecord {
        let info = try readTeamInfo(&r)
        let owner = try r.readString()
        var t = TeamRecord(info: info, owner: owner, at: 0)
        t.members = [:]
        for _ in 0..<(try r.readCount(minimumItemBytes: 6)) {
            let (account, m) = try readTeamMember(&r)
            t.members[account] = m
        }
        for _ in 0..<(try r.readCount(minimumItemBytes: 4)) {
            let account = try r.readString()
            t.invitations[account] = TeamInvitation(inviter: try r.readString(), postscript: try r.readString(), at: try r.readInt64())
        }
        for _ in 0..<(try r.readCount(minimumItemBytes: 3)) {
            let account = try r.readString()
            t.applications[account] = FriendRequest(message: try r.readString(), at: try r.readInt64())
        }
        t.log = try readLog(&r, windowed: windowed) { r throws(CodecError) in try readTeamItem(&r) }
        t.rederive()
        return t
    }

    static func readEffect(_ r: inout ByteReader) throws(CodecError) -> ImEffect {
        let target = try r.readString(), from = try r.readString(), at = try r.readInt64()
        let change: ImEffect.Change
        switch try r.readByte() {
        case 1: change = .befriendedBy
        case 2: change = .requestedBy(message: try r.readString())
        case 3: change = .acceptedBy
        case 4: change = .rejectedBy
        case 5: change = .unfriendedBy
        case 6: change = .sentCopy(try readMessage(&r))
        case 7: change = .joinedTeam(try r.readString(), fromSeq: try r.readUInt64())
        case 8: change = .leftTeam(try r.readString())
        case 9:
            let notice: TeamNotice = try r.readEnum()
            change = .teamNotice(notice, teamId: try r.readString(), message: try r.readString())
        case 10: change = .peerRead(throughSeq: try r.readUInt64())
        case let tag: throw .badTag("effect", UInt64(tag))
        }
        return ImEffect(target: target, from: from, change: change, at: at)
    }
}
