import ParleyWire

/// The binary form of what an IM command answered, for a proposal a node passed on to its shard's leader:
/// a tag per case, the result's success or error first. Appended tags only; a node refuses what it does not know.
public enum ImAnswerCodec {
    public static func write(_ result: Result<ImApplied, ImError>, into w: inout ByteWriter) {
        switch result {
        case .failure(let e): w.write(UInt8(1)); w.write(e.code.rawValue); w.write(e.message)
        case .success(let applied):
            w.write(UInt8(0))
            switch applied {
            case .user(let events): w.write(UInt8(1)); write(events, into: &w)
            case .sent(let s): w.write(UInt8(2)); w.write(s.seq); w.write(s.time); write(s.events, into: &w)
            case .team(let o):
                w.write(UInt8(3))
                w.write(o.messageSeq != nil); w.write(o.messageSeq ?? 0)
                w.write(UInt64(o.events.count))
                for e in o.events { write(e, into: &w) }
            case .effects(let events, let upTo): w.write(UInt8(4)); write(events, into: &w); w.write(upTo)
            case .confirmed: w.write(UInt8(5))
            case .read(let result): w.write(UInt8(6)); write(result, into: &w)
            }
        }
    }

    public static func read(_ r: inout ByteReader) throws(CodecError) -> Result<ImApplied, ImError> {
        switch try r.readByte() {
        case 0: break
        case 1:
            let raw = try r.readInt()
            guard let code = ImErrorCode(rawValue: raw) else { throw .badTag("IM error", UInt64(bitPattern: Int64(raw))) }
            return .failure(ImError(code, try r.readString()))
        case let tag: throw .badTag("IM result", UInt64(tag))
        }
        switch try r.readByte() {
        case 1: return .success(.user(try readEvents(&r)))
        case 2: return .success(.sent(ImSent(seq: try r.readUInt64(), time: try r.readInt64(), events: try readEvents(&r))))
        case 3:
            var o = TeamOutcome()
            let has = try r.readBool(), seq = try r.readUInt64()
            o.messageSeq = has ? seq : nil
            for _ in 0..<(try r.readCount(minimumItemBytes: 4)) { o.events.append(try readTeamEvent(&r)) }
            return .success(.team(o))
        case 4: return .success(.effects(events: try readEvents(&r), appliedUpTo: try r.readUInt64()))
        case 5: return .success(.confirmed)
        case 6: return .success(.read(try readResult(&r)))
        case let tag: throw .badTag("IM answer", UInt64(tag))
        }
    }

    public static func write(_ events: [ImEvent], into w: inout ByteWriter) {
        w.write(UInt64(events.count))
        for e in events {
            w.write(e.account)
            switch e.kind {
            case .friendChanged(let friend, let isFriend): w.write(UInt8(1)); w.write(friend); w.write(isFriend)
            case .blocklistChanged: w.write(UInt8(2))
            case .muteListChanged: w.write(UInt8(3))
            case .item(let item): w.write(UInt8(4)); ImShardState.write(item, into: &w)
            case .teamMembership(let teamId, let isMember, let from): w.write(UInt8(5)); w.write(teamId); w.write(isMember); w.write(from)
            case .read(.p2p(let peer), let reader, let through): w.write(UInt8(6)); w.write(peer); w.write(reader); w.write(through)
            case .read(.team(let teamId), let reader, let through): w.write(UInt8(7)); w.write(teamId); w.write(reader); w.write(through)
            }
        }
    }

    public static func readEvents(_ r: inout ByteReader) throws(CodecError) -> [ImEvent] {
        var out: [ImEvent] = []
        for _ in 0..<(try r.readCount(minimumItemBytes: 2)) {
            let account = try r.readString()
            switch try r.readByte() {
            case 1: out.append(ImEvent(account: account, kind: .friendChanged(friend: try r.readString(), isFriend: try r.readBool())))
            case 2: out.append(ImEvent(account: account, kind: .blocklistChanged))
            case 3: out.append(ImEvent(account: account, kind: .muteListChanged))
            case 4: out.append(ImEvent(account: account, kind: .item(try ImShardState.readItem(&r))))
            case 5:
                let teamId = try r.readString(), isMember = try r.readBool()
                out.append(ImEvent(account: account, kind: .teamMembership(teamId: teamId, isMember: isMember, fromSeq: try r.readUInt64())))
            case 6:
                let peer = try r.readString(), reader = try r.readString()
                out.append(ImEvent(account: account, kind: .read(.p2p(peer: peer), reader: reader, throughSeq: try r.readUInt64())))
            case 7:
                let teamId = try r.readString(), reader = try r.readString()
                out.append(ImEvent(account: account, kind: .read(.team(teamId: teamId), reader: reader, throughSeq: try r.readUInt64())))
            case let tag: throw .badTag("IM event", UInt64(tag))
            }
        }
        return out
    }

    public static func write(_ e: TeamEvent, into w: inout ByteWriter) {
        w.write(e.teamId); ImShardState.write(e.item, into: &w); w.write(e.alsoTo); w.write(e.noAlert)
    }

    public static func readTeamEvent(_ r: inout ByteReader) throws(CodecError) -> TeamEvent {
        TeamEvent(teamId: try r.readString(), item: try ImShardState.readTeamItem(&r), alsoTo: try r.readStrings(),
                  noAlert: try r.readStrings())
    }

    static func write(_ result: ImReadResult, into w: inout ByteWriter) {
        switch result {
        case .log(let items, let nextSeq, let firstSeq):
            w.write(UInt8(1)); w.write(UInt64(items.count))
            for i in items { ImShardState.write(i, into: &w) }
            w.write(nextSeq); w.write(firstSeq)
        case .relations(let rel):
            w.write(UInt8(2))
            w.write(UInt64(rel.friends.count))
            for f in rel.friends { w.write(f.account); w.write(f.since); w.write(f.remark) }
            for list in [rel.incoming, rel.outgoing] {
                w.write(UInt64(list.count))
                for q in list { w.write(q.account); w.write(q.message); w.write(q.at) }
            }
            w.write(rel.blocked); w.write(rel.muted); w.write(rel.teams)
        case .team(let t):
            // A supergroup's view has its own tag (7): an advanced team's keeps its bytes.
            w.write(UInt8(t.info.type == .superTeam ? 7 : 3)); w.write(t.teamId); ImShardState.write(t.info, into: &w); w.write(t.owner)
            w.write(UInt64(t.members.count))
            for m in t.members { ImShardState.write(m.account, m.member, into: &w) }
            w.write(UInt64(t.items.count))
            for i in t.items { ImShardState.write(i, into: &w) }
            w.write(t.nextSeq)
        case .teamReceipts(let receipts):
            w.write(UInt8(4)); w.write(UInt64(receipts.count))
            for x in receipts { w.write(x.seq); w.write(x.from); w.write(x.readers); w.write(x.unread) }
        case .conversations(let list, let teams):
            w.write(UInt8(5)); w.write(UInt64(list.count))
            for c in list {
                w.write(c.peer); ImShardState.write(c.last, into: &w); w.write(UInt64(c.unread)); w.write(c.readThrough)
                w.write(c.peerReadThrough)
            }
            write(teams, into: &w)
        case .teamSummaries(let list):
            w.write(UInt8(6)); write(list, into: &w)
        case .memberships(let list):
            w.write(UInt8(8)); w.write(UInt64(list.count))
            for m in list { w.write(m.teamId); w.write(m.type.rawValue); w.write(m.nextSeq) }
        }
    }

    static func write(_ list: [TeamSummary], into w: inout ByteWriter) {
        w.write(UInt64(list.count))
        for t in list {
            w.write(t.teamId); w.write(t.last != nil)
            if let last = t.last { ImShardState.write(last, into: &w) }
            w.write(UInt64(t.unread)); w.write(t.readThrough)
        }
    }

    static func readSummaries(_ r: inout ByteReader) throws(CodecError) -> [TeamSummary] {
        var list: [TeamSummary] = []
        for _ in 0..<(try r.readCount(minimumItemBytes: 4)) {
            let teamId = try r.readString()
            let last = try r.readBool() ? try ImShardState.readTeamItem(&r) : nil
            let unread = try r.readUInt64()
            list.append(TeamSummary(teamId: teamId, last: last, unread: Int(clamping: unread), readThrough: try r.readUInt64()))
        }
        return list
    }

    static func readResult(_ r: inout ByteReader) throws(CodecError) -> ImReadResult {
        let tag = try r.readByte()
        switch tag {
        case 1:
            var items: [ImLogItem] = []
            for _ in 0..<(try r.readCount(minimumItemBytes: 4)) { items.append(try ImShardState.readItem(&r)) }
            return .log(items: items, nextSeq: try r.readUInt64(), firstSeq: try r.readUInt64())
        case 2:
            var friends: [ImRelations.Friend] = []
            for _ in 0..<(try r.readCount(minimumItemBytes: 3)) {
                friends.append(ImRelations.Friend(account: try r.readString(), since: try r.readInt64(), remark: try r.readString()))
            }
            var sides: [[ImRelations.Request]] = []
            for _ in 0..<2 {
                var list: [ImRelations.Request] = []
                for _ in 0..<(try r.readCount(minimumItemBytes: 3)) {
                    list.append(ImRelations.Request(account: try r.readString(), message: try r.readString(), at: try r.readInt64()))
                }
                sides.append(list)
            }
            return .relations(ImRelations(friends: friends, incoming: sides[0], outgoing: sides[1], blocked: try r.readStrings(),
                                          muted: try r.readStrings(), teams: try r.readStrings()))
        case 3, 7:
            let teamId = try r.readString(), owner: String
            var info = try ImShardState.readTeamInfo(&r)
            if tag == 7 { info.type = .superTeam }
            owner = try r.readString()
            var members: [TeamView.Member] = []
            for _ in 0..<(try r.readCount(minimumItemBytes: 6)) {
                let (account, m) = try ImShardState.readTeamMember(&r)
                members.append(TeamView.Member(account: account, member: m))
            }
            var items: [TeamLogItem] = []
            for _ in 0..<(try r.readCount(minimumItemBytes: 4)) { items.append(try ImShardState.readTeamItem(&r)) }
            return .team(TeamView(teamId: teamId, info: info, owner: owner, members: members, items: items, nextSeq: try r.readUInt64()))
        case 4:
            var receipts: [TeamReceipt] = []
            for _ in 0..<(try r.readCount(minimumItemBytes: 4)) {
                receipts.append(TeamReceipt(seq: try r.readUInt64(), from: try r.readString(), readers: try r.readStrings(),
                                            unread: try r.readStrings()))
            }
            return .teamReceipts(receipts)
        case 5:
            var list: [ConversationView] = []
            for _ in 0..<(try r.readCount(minimumItemBytes: 6)) {
                let peer = try r.readString(), last = try ImShardState.readItem(&r)
                let unread = try r.readUInt64()
                list.append(ConversationView(peer: peer, last: last, unread: Int(clamping: unread), readThrough: try r.readUInt64(),
                                             peerReadThrough: try r.readUInt64()))
            }
            return .conversations(list, teams: try readSummaries(&r))
        case 6: return .teamSummaries(try readSummaries(&r))
        case 8:
            var list: [TeamMembership] = []
            for _ in 0..<(try r.readCount(minimumItemBytes: 3)) {
                list.append(TeamMembership(teamId: try r.readString(), type: try r.readEnum(), nextSeq: try r.readUInt64()))
            }
            return .memberships(list)
        default: throw .badTag("IM read result", UInt64(tag))
        }
    }
}
