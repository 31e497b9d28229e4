import ParleyWire

/// E3 across shards: the rooms each user is in, kept by the user's *home shard* (the shard of
/// `RoomSlots.homeKey(userId)`). An edge claims a slot there before it enters a room in any shard and releases
/// it when the session leaves, so the 10-room limit holds whichever shards the rooms are in.
public struct RoomSlot: Sendable, Hashable {
    public var roomId: String
    public var sessionId: String
    public var edgeId: String

    public init(roomId: String, sessionId: String, edgeId: String) {
        self.roomId = roomId
        self.sessionId = sessionId
        self.edgeId = edgeId
    }
}

public enum RoomSlots {
    /// The key whose shard is a user's home shard (hash it like a room id).
    public static func homeKey(_ userId: String) -> String { "\u{1}user:" + userId }
}

extension RoomSlot: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId)
        w.write(sessionId)
        w.write(edgeId)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        roomId = try r.readString()
        sessionId = try r.readString()
        edgeId = try r.readString()
    }
}

extension RoomsState {
    /// E3: claims a room slot for the acting session's user; refuses the 11th distinct room (13101). A claim
    /// the session already holds is a no-op. With the RC one-room policy on there is no count: the answer is the
    /// user's other rooms (sorted, distinct), which the edge makes the user leave (`yieldRoom`).
    mutating func claimSlot(_ roomId: String, _ env: ApplyEnv) throws(RoomError) -> [String]? {
        guard case .session(let s) = env.context.actor else {
            throw RoomError(.noPermission, "only a client session claims a room slot")
        }
        try FieldCheck.roomId(roomId, limits)
        let user = AppScope.user(s.userId, ofRoom: roomId)
        var held = slots[user] ?? []
        let rooms = Set(held.map(\.roomId))
        let others: [String]? = policy(forRoom: roomId).oneRoomPerUser ? rooms.subtracting([roomId]).sorted() : nil
        guard !held.contains(where: { $0.roomId == roomId && $0.sessionId == s.sessionId }) else { return others }
        if others == nil, !rooms.contains(roomId), rooms.count >= limits.maxRoomsPerUser {
            throw RoomError(.tooManyRooms, "the user is already in \(limits.maxRoomsPerUser) rooms")
        }
        held.append(RoomSlot(roomId: roomId, sessionId: s.sessionId, edgeId: s.edgeId))
        held.sort { ($0.roomId, $0.sessionId) < ($1.roomId, $1.sessionId) }
        slots[user] = held
        return others
    }

    /// E3: releases the acting session's slot for the room (a no-op when it holds none: releases are
    /// retried and may cross a lease expiry).
    mutating func releaseSlot(_ roomId: String, _ env: ApplyEnv) throws(RoomError) {
        guard case .session(let s) = env.context.actor else {
            throw RoomError(.noPermission, "only a client session releases a room slot")
        }
        let user = AppScope.user(s.userId, ofRoom: roomId)
        guard var held = slots[user] else { return }
        held.removeAll { $0.roomId == roomId && $0.sessionId == s.sessionId }
        slots[user] = held.isEmpty ? nil : held
    }

    /// A lost edge's slots go with its sessions.
    mutating func releaseSlots(onEdge edgeId: String) {
        for user in slots.keys.sorted() {
            let kept = slots[user]!.filter { $0.edgeId != edgeId }
            slots[user] = kept.isEmpty ? nil : kept
        }
    }

    /// The rooms a user (`AppScope.user`: the account in its app's namespace) holds slots for (sorted, distinct).
    public func slotRooms(of userId: String) -> [String] { Array(Set((slots[userId] ?? []).map(\.roomId))).sorted() }
}
