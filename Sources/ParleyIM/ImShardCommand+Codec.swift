import ParleyWire

/// The binary form of an `ImShardCommand` in a Raft entry: a version byte, then a tag per case. A node
/// refuses (throws on) a version or tag it does not know rather than misread it; a changed layout gets a new
/// version.
extension ImShardCommand {
    public static let codecVersion: UInt8 = 1

    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.write(Self.codecVersion)
        switch self {
        case .user(let c):
            w.write(UInt8(1))
            switch c {
            case .friend(let op, let target, let message): w.write(UInt8(1)); w.write(op.rawValue); w.write(target); w.write(message)
            case .deleteFriend(let target, let removeRemark): w.write(UInt8(2)); w.write(target); w.write(removeRemark)
            case .updateRemark(let target, let remark): w.write(UInt8(3)); w.write(target); w.write(remark)
            case .setBlocked(let target, let on): w.write(UInt8(4)); w.write(target); w.write(on)
            case .setMuted(let target, let on): w.write(UInt8(5)); w.write(target); w.write(on)
            }
        case .send(let m):
            w.write(UInt8(2)); w.write(m.to); w.write(m.clientMessageId); w.write(m.type); w.write(m.body); w.write(m.ext)
        case .team(let teamId, let c):
            w.write(UInt8(3)); w.write(teamId)
            Self.write(c, into: &w)
        case .effects(let source, let entries):
            w.write(UInt8(4)); w.write(source)
            Self.write(entries, into: &w)
        case .screenedEffects(let source, let entries):
            w.write(UInt8(7)); w.write(source)
            Self.write(entries, into: &w)
        case .confirm(let seqs):
            w.write(UInt8(5))
            w.write(UInt64(seqs.count))
            for s in seqs { w.write(s) }
        case .read(let read):
            w.write(UInt8(6))
            switch read {
            case .log(let after, let limit): w.write(UInt8(1)); w.write(after); w.write(limit)
            case .relations: w.write(UInt8(2))
            case .team(let teamId, let after, let limit): w.write(UInt8(3)); w.write(teamId); w.write(after); w.write(limit)
            case .teamReceipts(let teamId, let seqs): w.write(UInt8(4)); w.write(teamId); w.write(UInt64(seqs.count)); for s in seqs { w.write(s) }
            case .conversations: w.write(UInt8(5))
            case .teamSummaries(let teamIds): w.write(UInt8(6)); w.write(teamIds)
            case .memberships(let teamIds): w.write(UInt8(7)); w.write(teamIds)
            case .teamLog(let teamId, let after, let limit): w.write(UInt8(8)); w.write(teamId); w.write(after); w.write(limit)
            }
        case .setLogWindow(let bytes):
            w.write(UInt8(9)); w.write(bytes)
        case .markRead(let mark):
            w.write(UInt8(8))
            switch mark {
            case .p2p(let peer, let through): w.write(UInt8(1)); w.write(peer); w.write(through)
            case .team(let teamId, let through): w.write(UInt8(2)); w.write(teamId); w.write(through)
            }
        }
        return w.bytes
    }

    public init(decoding bytes: [UInt8]) throws(CodecError) {
        var r = ByteReader(bytes)
        let version = try r.readByte()
        guard version == Self.codecVersion else { throw .badVersion(version) }
        switch try r.readByte() {
        case 1:
            switch try r.readByte() {
            case 1:
                let op: FriendOperation = try r.readEnum()
                self = .user(.friend(op, target: try r.readString(), message: try r.readString()))
            case 2: self = .user(.deleteFriend(target: try r.readString(), removeRemark: try r.readBool()))
            case 3: self = .user(.updateRemark(target: try r.readString(), remark: try r.readString()))
            case 4: self = .user(.setBlocked(target: try r.readString(), try r.readBool()))
            case 5: self = .user(.setMuted(target: try r.readString(), try r.readBool()))
            case let tag: throw .badTag("user command", UInt64(tag))
            }
        case 2:
            self = .send(P2PSend(to: try r.readString(), clientMessageId: try r.readString(), type: try r.readString(),
                                 body: try r.readString(), ext: try r.readString()))
        case 3:
            let teamId = try r.readString()
            self = .team(teamId: teamId, try Self.readTeamCommand(&r))
        case 4:
            let source = try r.readInt()
            self = .effects(from: source, try Self.readEntries(&r))
        case 7:
            let source = try r.readInt()
            self = .screenedEffects(from: source, try Self.readEntries(&r))
        case 5:
            var seqs: [UInt64] = []
            for _ in 0..<(try r.readCount(minimumItemBytes: 1)) { seqs.append(try r.readUInt64()) }
            self = .confirm(seqs)
        case 6:
            switch try r.readByte() {
            case 1: self = .read(.log(after: try r.readUInt64(), limit: try r.readInt()))
            case 2: self = .read(.relations)
            case 3: self = .read(.team(teamId: try r.readString(), after: try r.readUInt64(), limit: try r.readInt()))
            case 4:
                let teamId = try r.readString()
                var seqs: [UInt64] = []
                for _ in 0..<(try r.readCount(minimumItemBytes: 1)) { seqs.append(try r.readUInt64()) }
                self = .read(.teamReceipts(teamId: teamId, seqs: seqs))
            case 5: self = .read(.conversations)
            case 6: self = .read(.teamSummaries(teamIds: try r.readStrings()))
            case 7: self = .read(.memberships(teamIds: try r.readStrings()))
            case 8: self = .read(.teamLog(teamId: try r.readString(), after: try r.readUInt64(), limit: try r.readInt()))
            case let tag: throw .badTag("IM read", UInt64(tag))
            }
        case 8:
            switch try r.readByte() {
            case 1: self = .markRead(.p2p(peer: try r.readString(), throughSeq: try r.readUInt64()))
            case 2: self = .markRead(.team(teamId: try r.readString(), throughSeq: try r.readUInt64()))
            case let tag: throw .badTag("read mark", UInt64(tag))
            }
        case 9: self = .setLogWindow(bytes: try r.readInt())
        case let tag:
            throw .badTag("IM command", UInt64(tag))
        }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
    }

    static func write(_ entries: [OutboxEntry], into w: inout ByteWriter) {
        w.write(UInt64(entries.count))
        for e in entries { w.write(e.seq); ImShardState.write(e.effect, into: &w) }
    }

    static func readEntries(_ r: inout ByteReader) throws(CodecError) -> [OutboxEntry] {
        var entries: [OutboxEntry] = []
        for _ in 0..<(try r.readCount(minimumItemBytes: 5)) {
            entries.append(OutboxEntry(seq: try r.readUInt64(), effect: try ImShardState.readEffect(&r)))
        }
        return entries
    }

    static func write(_ c: TeamCommand, into w: inout ByteWriter) {
        switch c {
        case .create(let info):
            // A supergroup's create has a tag of its own (18), so an advanced team's keeps its first bytes; it is
            // proposed only once every node reads it (`PeerProtocol.Feature.superTeams`).
            w.write(UInt8(info.type == .superTeam ? 18 : 1)); ImShardState.write(info, into: &w)
        case .invite(let targets, let postscript, let ext): w.write(UInt8(2)); w.write(targets); w.write(postscript); w.write(ext)
        case .acceptInvitation: w.write(UInt8(3))
        case .rejectInvitation: w.write(UInt8(4))
        case .apply(let message): w.write(UInt8(5)); w.write(message)
        case .approveApplication(let applicant, let ext): w.write(UInt8(6)); w.write(applicant); w.write(ext)
        case .rejectApplication(let applicant): w.write(UInt8(7)); w.write(applicant)
        case .kick(let targets, let ext): w.write(UInt8(8)); w.write(targets); w.write(ext)
        case .leave(let ext): w.write(UInt8(9)); w.write(ext)
        case .update(let changes, let ext):
            w.write(UInt8(10))
            w.write(UInt64(changes.count))
            for tag in changes.keys.sorted() { w.write(tag.rawValue); w.write(changes[tag]!) }
            w.write(ext)
        case .dismiss(let ext): w.write(UInt8(11)); w.write(ext)
        case .transferOwner(let to, let leave, let ext): w.write(UInt8(12)); w.write(to); w.write(leave); w.write(ext)
        case .addManagers(let list, let ext): w.write(UInt8(13)); w.write(list); w.write(ext)
        case .removeManagers(let list, let ext): w.write(UInt8(14)); w.write(list); w.write(ext)
        case .muteMember(let target, let muted, let ext): w.write(UInt8(15)); w.write(target); w.write(muted); w.write(ext)
        case .setNotifyState(let state): w.write(UInt8(16)); w.write(state.rawValue)
        case .send(let cmid, let type, let body, let ext):
            w.write(UInt8(17)); w.write(cmid); w.write(type); w.write(body); w.write(ext)
        }
    }

    static func readTeamCommand(_ r: inout ByteReader) throws(CodecError) -> TeamCommand {
        switch try r.readByte() {
        case 1: return .create(try ImShardState.readTeamInfo(&r))
        case 2: return .invite(targets: try r.readStrings(), postscript: try r.readString(), notifyExt: try r.readString())
        case 3: return .acceptInvitation
        case 4: return .rejectInvitation
        case 5: return .apply(message: try r.readString())
        case 6: return .approveApplication(applicant: try r.readString(), notifyExt: try r.readString())
        case 7: return .rejectApplication(applicant: try r.readString())
        case 8: return .kick(targets: try r.readStrings(), notifyExt: try r.readString())
        case 9: return .leave(notifyExt: try r.readString())
        case 10:
            var changes: [TeamUpdateTag: String] = [:]
            for _ in 0..<(try r.readCount(minimumItemBytes: 2)) {
                let tag: TeamUpdateTag = try r.readEnum()
                guard changes.updateValue(try r.readString(), forKey: tag) == nil else { throw .invalidValue("a tag twice") }
            }
            return .update(changes, notifyExt: try r.readString())
        case 11: return .dismiss(notifyExt: try r.readString())
        case 12: return .transferOwner(to: try r.readString(), leave: try r.readBool(), notifyExt: try r.readString())
        case 13: return .addManagers(try r.readStrings(), notifyExt: try r.readString())
        case 14: return .removeManagers(try r.readStrings(), notifyExt: try r.readString())
        case 15: return .muteMember(try r.readString(), muted: try r.readBool(), notifyExt: try r.readString())
        case 16: return .setNotifyState(try r.readEnum())
        case 17: return .send(clientMessageId: try r.readString(), type: try r.readString(), body: try r.readString(), ext: try r.readString())
        case 18:
            var info = try ImShardState.readTeamInfo(&r)
            info.type = .superTeam
            return .create(info)
        case let tag: throw .badTag("team command", UInt64(tag))
        }
    }
}
