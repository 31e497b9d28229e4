import ParleyWire

/// Who receives an event; the edge fans it out accordingly.
public enum EventAudience: Sendable, Hashable {
    /// Every online session of the room.
    case room
    /// Every session of these users (in this room, or wherever they are for shard-wide events).
    case users([String])
    /// Exactly these sessions.
    case sessions([String])
}

/// E9: why a session was removed from a room.
public enum KickReason: UInt8, Sendable, CaseIterable {
    case invalidRoom = 1, byManager = 2, byConflictLogin = 3, blacklist = 5
}

/// E11: RC chatroom status events addressed to the session concerned.
public enum RoomStatus: Sendable, Hashable {
    /// Joined, with the response data (online count, join time).
    case joined(memberCount: Int, time: Int64)
    case quit
    /// The room was destroyed; RC destroy type 0 = by the app server.
    case destroyed(type: UInt8)
    /// The cluster ended this session: its edge stopped renewing its lease on the shard (the leader could not
    /// hear it). The client is still connected, so it is told, and re-enters (docs/cluster.md, "Edge leases").
    case lost
}

/// E12: one RC member action.
public struct MemberAction: Sendable, Hashable {
    public enum Kind: UInt8, Sendable { case quit = 0, join = 1 }
    public var userId: String
    public var action: Kind

    public init(userId: String, action: Kind) {
        self.userId = userId
        self.action = action
    }
}

/// M8 / RC `RCChatRoomMemberBanEvent.banType`.
public enum BanType: UInt8, Sendable, CaseIterable {
    case unmuteUser = 0, muteUser = 1, roomUnmute = 2, roomMute = 3, allowlistRemove = 4,
         allowlistAdd = 5, globalUnmute = 6, globalMute = 7
}

/// What happened.
public enum RoomEventKind: Sendable, Hashable {
    /// N3: a 301-320 notification.
    indirect case notification(RoomNotification)
    /// N1: a chat message.
    case message(ChatMessage)
    /// E9: the session was removed from the room.
    case kicked(reason: KickReason, ext: String)
    /// E11: RC status of the addressed session.
    case status(RoomStatus)
    /// E12: RC member join / quit with the current member count.
    case memberChange([MemberAction], memberCount: Int)
    /// E7: RC multi-login sync to the user's other devices: status 1 join / 0 leave;
    /// reason (leave only) 1 voluntary, 2 kicked by a join elsewhere.
    case multiLoginSync(joined: Bool, reason: UInt8, time: Int64)
    /// M8 / RC block (ban) event: operateType 1 block / 0 unblock, duration in ms (0 = permanent).
    case block(blocked: Bool, durationMillis: Int64, operateTime: Int64, userIds: [String], extra: String)
    /// M8 / M9 / R5 / R6 / RC mute (ban) event.
    case ban(BanType, durationMillis: Int64, operateTime: Int64, userIds: [String], extra: String)
}

/// One event caused by a command.
public struct RoomEvent: Sendable, Hashable {
    public var roomId: String
    /// The room's sequence number for room-wide events, 0 for events addressed to users or sessions.
    public var seq: UInt64
    public var audience: EventAudience
    public var kind: RoomEventKind

    public init(roomId: String, seq: UInt64, audience: EventAudience, kind: RoomEventKind) {
        self.roomId = roomId
        self.seq = seq
        self.audience = audience
        self.kind = kind
    }

    /// The notification carried, if any (handy for the edge and for tests).
    public var notification: RoomNotification? {
        if case .notification(let n) = kind { return n }
        return nil
    }
}

extension EventAudience: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .room: w.write(UInt8(0))
        case .users(let ids): w.write(UInt8(1)); w.write(ids)
        case .sessions(let ids): w.write(UInt8(2)); w.write(ids)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0: self = .room
        case 1: self = .users(try r.readStrings())
        case 2: self = .sessions(try r.readStrings())
        case let t: throw .badTag("EventAudience", UInt64(t))
        }
    }
}

extension MemberAction: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(userId)
        w.write(action.rawValue)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        userId = try r.readString()
        action = try r.readEnum()
    }
}

extension RoomEventKind: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .notification(let n):
            w.write(UInt8(0)); w.write(n)
        // A message of normal priority keeps tag 1 (nodes before D3 read it); another priority is tag 11.
        case .message(let m) where m.priority == .normal:
            w.write(UInt8(1)); w.write(m)
        case .message(let m):
            w.write(UInt8(11)); w.write(m); w.write(m.priority.rawValue)
        case .kicked(let reason, let ext):
            w.write(UInt8(2)); w.write(reason.rawValue); w.write(ext)
        case .status(.joined(let count, let time)):
            w.write(UInt8(3)); w.write(count); w.write(time)
        case .status(.quit):
            w.write(UInt8(4))
        case .status(.destroyed(let type)):
            w.write(UInt8(5)); w.write(type)
        case .status(.lost):
            w.write(UInt8(10))
        case .memberChange(let actions, let count):
            w.write(UInt8(6)); w.write(actions); w.write(count)
        case .multiLoginSync(let joined, let reason, let time):
            w.write(UInt8(7)); w.write(joined); w.write(reason); w.write(time)
        case .block(let blocked, let duration, let time, let ids, let extra):
            w.write(UInt8(8)); w.write(blocked); w.write(duration); w.write(time); w.write(ids); w.write(extra)
        case .ban(let type, let duration, let time, let ids, let extra):
            w.write(UInt8(9)); w.write(type.rawValue); w.write(duration); w.write(time); w.write(ids)
            w.write(extra)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0: self = .notification(try r.read())
        case 1: self = .message(try r.read())
        case 11: self = .message(try ChatMessage.withPriority(&r))
        case 2: self = .kicked(reason: try r.readEnum(), ext: try r.readString())
        case 3: self = .status(.joined(memberCount: try r.readInt(), time: try r.readInt64()))
        case 4: self = .status(.quit)
        case 5: self = .status(.destroyed(type: try r.readByte()))
        case 10: self = .status(.lost)
        case 6: self = .memberChange(try r.readArray(), memberCount: try r.readInt())
        case 7: self = .multiLoginSync(joined: try r.readBool(), reason: try r.readByte(), time: try r.readInt64())
        case 8:
            self = .block(blocked: try r.readBool(), durationMillis: try r.readInt64(),
                          operateTime: try r.readInt64(), userIds: try r.readStrings(), extra: try r.readString())
        case 9:
            self = .ban(try r.readEnum(), durationMillis: try r.readInt64(), operateTime: try r.readInt64(),
                        userIds: try r.readStrings(), extra: try r.readString())
        case let t: throw .badTag("RoomEventKind", UInt64(t))
        }
    }
}

extension RoomEvent: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId)
        w.write(seq)
        w.write(audience)
        w.write(kind)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        roomId = try r.readString()
        seq = try r.readUInt64()
        audience = try r.read()
        kind = try r.read()
    }
}
