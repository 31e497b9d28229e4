import ParleyWire

/// M2: the role a member holds; restrictions (block, mute) are flags beside it.
public enum MemberRole: UInt8, Sendable, CaseIterable, Comparable {
    case visitor = 0, common = 1, manager = 2, creator = 3

    public static func < (a: MemberRole, b: MemberRole) -> Bool { a.rawValue < b.rawValue }
}

/// M1 / M3: the member type a client sees.
public enum MemberType: UInt8, Sendable, CaseIterable {
    case creator = 0, manager = 1, common = 2
    /// Blocklisted or permanently muted (a fixed member).
    case limited = 3
    /// Temporary member / visitor: non-fixed, exists only while online.
    case visitor = 4
}

/// M1 / M3: what the room stores about a user: every fixed member, and every online visitor.
struct RoomMember: Sendable, Hashable {
    var userId: String
    var role: MemberRole
    var nickname: String
    var avatar: String
    var ext: String
    /// M2: permanent mute.
    var isMuted: Bool
    /// M2: blocklisted until this time (Int64.max = permanently); nil = not blocklisted.
    var blockedUntil: Int64?
    /// Last enter time (ms).
    var enterTime: Int64
    /// M4 paging key: assigned from the room's counter when the record is created.
    var pageKey: UInt64

    /// M1: fixed members survive going offline.
    var isFixed: Bool { role != .visitor || isMuted || blockedUntil != nil }

    func isBlocked(at now: Int64) -> Bool {
        guard let until = blockedUntil else { return false }
        return now < until
    }

    /// M1: creator and manager keep their type while restricted; others become limited.
    var type: MemberType {
        switch role {
        case .creator: return .creator
        case .manager: return .manager
        case .common, .visitor:
            if isMuted || blockedUntil != nil { return .limited }
            return role == .common ? .common : .visitor
        }
    }
}

/// M3: a member as returned by the member queries.
public struct MemberView: Sendable, Hashable {
    public var userId: String
    public var roomNickname: String
    public var roomAvatar: String
    public var roomExt: String
    public var type: MemberType
    public var isMuted: Bool
    public var isTempMuted: Bool
    /// Remaining seconds of the temporary mute, from the entry's time.
    public var tempMuteDuration: UInt64
    public var isInBlackList: Bool
    public var isOnline: Bool
    public var enterTime: Int64
    /// M4: pass the last member's key as the next page's anchor.
    public var pageKey: UInt64
}

/// E1: one online session (device / connection) in a room.
struct RoomSession: Sendable, Hashable {
    var sessionId: String
    var userId: String
    var edgeId: String
    var authMode: AuthMode
    /// E1: entry-scoped member ext, carried on everything this session causes.
    var roomExt: String
    /// E1: carried in the 301 (and 302) notification.
    var roomNotifyExt: String
    var enterTime: Int64
}

/// Q1-Q3: one queue element and who last wrote it.
struct QueueItem: Sendable, Hashable {
    var value: String
    /// The last writer (Q2); empty for the app server.
    var owner: String
    /// Q3: removed when the owner leaves the room.
    var transient: Bool
}

extension RoomMember: BinaryCodable {
    func encode(to w: inout ByteWriter) {
        w.write(userId)
        w.write(role.rawValue)
        w.write(nickname)
        w.write(avatar)
        w.write(ext)
        w.write(isMuted)
        w.write(blockedUntil != nil)
        if let b = blockedUntil { w.write(b) }
        w.write(enterTime)
        w.write(pageKey)
    }

    init(from r: inout ByteReader) throws(CodecError) {
        userId = try r.readString()
        role = try r.readEnum()
        nickname = try r.readString()
        avatar = try r.readString()
        ext = try r.readString()
        isMuted = try r.readBool()
        blockedUntil = try r.readBool() ? try r.readInt64() : nil
        enterTime = try r.readInt64()
        pageKey = try r.readUInt64()
    }
}

extension RoomSession: BinaryCodable {
    func encode(to w: inout ByteWriter) {
        w.write(sessionId)
        w.write(userId)
        w.write(edgeId)
        w.write(authMode.rawValue)
        w.write(roomExt)
        w.write(roomNotifyExt)
        w.write(enterTime)
    }

    init(from r: inout ByteReader) throws(CodecError) {
        sessionId = try r.readString()
        userId = try r.readString()
        edgeId = try r.readString()
        authMode = try r.readEnum()
        roomExt = try r.readString()
        roomNotifyExt = try r.readString()
        enterTime = try r.readInt64()
    }
}
