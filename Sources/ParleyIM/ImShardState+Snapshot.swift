import ParleyWire

/// Snapshot and restore of a shard's IM state: versioned, byte-deterministic (every dictionary and set
/// written in sorted order), so two replicas that agree write the same bytes.
extension ImShardState {
    static let snapshotMagic: [UInt8] = [0x50, 0x49, 0x4D, 0x53]  // "PIMS"
    public static let snapshotVersion: UInt8 = 1

    public func snapshot() -> [UInt8] {
        var w = ByteWriter()
        for b in Self.snapshotMagic { w.write(b) }
        w.write(Self.snapshotVersion)
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
            w.write(u.nextSeq)
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
        guard version == Self.snapshotVersion else { throw .badVersion(version) }
        self.init(limits: limits)
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
            u.nextSeq = try r.readUInt64()
            users[account] = u
        }
        for _ in 0..<(try r.readCount(minimumItemBytes: 4)) {
            outbox.append(OutboxEntry(seq: try r.readUInt64(), effect: try Self.readEffect(&r)))
        }
        nextEffectSeq = try r.readUInt64()
        for _ in 0..<(try r.readCount(minimumItemBytes: 2)) { appliedFrom[try r.readInt()] = try r.readUInt64() }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
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
        }
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
        case let tag: throw .badTag("effect", UInt64(tag))
        }
        return ImEffect(target: target, from: from, change: change, at: at)
    }
}
