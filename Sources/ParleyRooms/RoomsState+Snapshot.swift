import Collections
import ParleyWire

/// Snapshot and restore of a shard's rooms: a versioned, byte-deterministic binary form
/// (every dictionary written in sorted key order) for Raft snapshots.
extension RoomsState {
    static let snapshotMagic: [UInt8] = [0x50, 0x52, 0x4D, 0x53]  // "PRMS"
    /// Bump when the layout changes; restore refuses versions it does not know.
    /// 4 adds the apps' own policies (A8); 5 the apps' send budgets (A1); 3 and 4 are still read (none had
    /// one). 6 adds the windows' byte bound (SPEC D1), written only once one is set (which only a cluster whose
    /// every node reads it does), so until then a snapshot is byte for byte version 5.
    public static let snapshotVersion: UInt8 = 6
    static let unboundedWindowVersion: UInt8 = 5

    /// The whole state as bytes.
    public func snapshot() -> [UInt8] {
        var w = ByteWriter(capacity: snapshotSizeEstimate)
        for b in Self.snapshotMagic { w.write(b) }
        w.write(historyWindowBytes > 0 ? Self.snapshotVersion : Self.unboundedWindowVersion)
        w.write(limits)
        w.write(policy)
        let namespaces = appPolicies.keys.sorted()
        w.write(UInt64(namespaces.count))
        for ns in namespaces {
            w.write(ns)
            w.write(appPolicies[ns]!)
        }
        let budgeted = sendBudgets.keys.sorted()
        w.write(UInt64(budgeted.count))
        for ns in budgeted {
            w.write(ns)
            w.write(sendBudgets[ns]!)
        }
        if historyWindowBytes > 0 { w.write(historyWindowBytes) }
        let mutes = globalMutes.keys.sorted()
        w.write(UInt64(mutes.count))
        for u in mutes {
            w.write(u)
            w.write(globalMutes[u]!)
        }
        let users = slots.keys.sorted()
        w.write(UInt64(users.count))
        for u in users {
            w.write(u)
            w.write(slots[u]!)
        }
        let ids = rooms.ids
        w.write(UInt64(ids.count))
        for id in ids { rooms[slot: rooms.slot(of: id)!].encode(to: &w) }
        return w.bytes
    }

    /// Rebuilds a state from `snapshot()` bytes; garbage throws.
    public init(restoring bytes: [UInt8]) throws(CodecError) {
        var r = ByteReader(bytes)
        for b in Self.snapshotMagic where try r.readByte() != b { throw .badMagic }
        let version = try r.readByte()
        guard (3...Self.snapshotVersion).contains(version) else { throw .badVersion(version) }
        self.init(limits: try r.read(), policy: try r.read())
        if version >= 4 {
            for _ in 0 ..< (try r.readCount(minimumItemBytes: 2)) {
                let ns = try r.readString()
                guard appPolicies[ns] == nil else { throw .invalidValue("app policy of \(ns)") }
                appPolicies[ns] = try r.read()
            }
        }
        if version >= 5 {
            for _ in 0 ..< (try r.readCount(minimumItemBytes: 2)) {
                let ns = try r.readString()
                guard sendBudgets[ns] == nil else { throw .invalidValue("send budget of \(ns)") }
                sendBudgets[ns] = try r.read()
            }
        }
        if version >= 6 {
            let bytes = try r.readInt()
            guard Self.historyWindowRange.contains(bytes) else { throw .invalidValue("history window bytes") }
            historyWindowBytes = bytes
        }
        for _ in 0 ..< (try r.readCount(minimumItemBytes: 2)) {
            let u = try r.readString()
            globalMutes[u] = try r.readInt64()
        }
        for _ in 0 ..< (try r.readCount(minimumItemBytes: 2)) {
            let u = try r.readString()
            let held: [RoomSlot] = try r.readArray()
            guard !held.isEmpty, slots[u] == nil else { throw .invalidValue("room slots of \(u)") }
            slots[u] = held
        }
        for _ in 0 ..< (try r.readCount(minimumItemBytes: 8)) {
            let room = try Room(from: &r)
            guard rooms.slot(of: room.info.roomId) == nil else { throw .invalidValue("duplicate room") }
            rooms.insert(room)
        }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
        // E3's index is derived; rebuilding it in sorted room order keeps each list sorted.
        for id in rooms.ids {
            for u in rooms[slot: rooms.slot(of: id)!].userSessions.keys {
                userRooms[AppScope.user(u, ofRoom: id), default: []].append(id)
            }
        }
        rebuildHeads()
    }

    /// A cheap upper-bound guess of the snapshot size in bytes (for Raft's snapshot policy).
    public var snapshotSizeEstimate: Int {
        var total = 64 + globalMutes.count * 24
        for room in rooms.slots {
            total += 256 + room.info.ext.utf8.count + room.info.announcement.utf8.count
            total += room.members.count * 96 + room.sessions.count * 96 + room.tempMutes.count * 24
            total += room.allowlist.count * 24
            for (k, item) in room.queue { total += k.utf8.count + item.value.utf8.count + 24 }
            total += room.historyBytes
        }
        return total
    }
}

extension Room: BinaryCodable {
    func encode(to w: inout ByteWriter) {
        w.write(info)
        w.write(seq)
        w.write(nextPageKey)
        let memberIds = members.keys.sorted()
        w.write(UInt64(memberIds.count))
        for id in memberIds { w.write(members[id]!) }
        // Sessions grouped by user, each user's in enter order (E7 needs that order back).
        let users = userSessions.keys.sorted()
        w.write(UInt64(users.count))
        for u in users {
            let sids = userSessions[u]!
            w.write(UInt64(sids.count))
            for sid in sids { w.write(sessions[sid]!) }
        }
        let muted = tempMutes.keys.sorted()
        w.write(UInt64(muted.count))
        for u in muted {
            w.write(u)
            w.write(tempMutes[u]!)
        }
        w.write(allowlist.sorted())
        w.write(queueMaxSize)
        w.write(UInt64(queue.count))
        for (key, item) in queue {
            w.write(key)
            w.write(item.value)
            w.write(item.owner)
            w.write(item.transient)
        }
        w.write(UInt64(history.count))
        for item in history { w.write(item) }
        w.write(droppedThroughSeq)
    }

    init(from r: inout ByteReader) throws(CodecError) {
        self.init(info: try r.read(), queueMaxSize: 0)
        seq = try r.readUInt64()
        nextPageKey = try r.readUInt64()
        for _ in 0 ..< (try r.readCount()) {
            let m: RoomMember = try r.read()
            members[m.userId] = m
        }
        for _ in 0 ..< (try r.readCount()) {
            var sids: [String] = []
            var user: String?
            for _ in 0 ..< (try r.readCount()) {
                let s: RoomSession = try r.read()
                guard user == nil || user == s.userId, sessions[s.sessionId] == nil else {
                    throw .invalidValue("session grouping")
                }
                user = s.userId
                sessions[s.sessionId] = s
                sids.append(s.sessionId)
            }
            guard let user, userSessions[user] == nil else { throw .invalidValue("empty session group") }
            userSessions[user] = sids
        }
        for _ in 0 ..< (try r.readCount()) {
            let u = try r.readString()
            tempMutes[u] = try r.readInt64()
        }
        allowlist = Set(try r.readStrings())
        queueMaxSize = try r.readInt()
        for _ in 0 ..< (try r.readCount(minimumItemBytes: 4)) {
            let key = try r.readString()
            queue[key] = QueueItem(value: try r.readString(), owner: try r.readString(), transient: try r.readBool())
        }
        let n = try r.readCount()
        history.reserveCapacity(n)
        for _ in 0 ..< n { history.append(try r.read()) }
        historyBytes = history.reduce(0) { $0 + $1.estimatedBytes }
        droppedThroughSeq = try r.readUInt64()
        for case .message(let m) in history where !m.clientMessageId.isEmpty { sentMessages[Self.sentKey(m)] = m.seq }
        // The invariants apply relies on: forged bytes must fail here, not trap later.
        guard queueMaxSize >= 0, userSessions.keys.allSatisfy({ members[$0] != nil }),
              members[info.creator]?.role == .creator,
              members.values.allSatisfy({ $0.pageKey < nextPageKey }) else {
            throw .invalidValue("inconsistent room \(info.roomId)")
        }
    }
}
