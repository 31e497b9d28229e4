import ParleyWire

/// How a client session authenticated (E4, E5).
public enum AuthMode: UInt8, Sendable, CaseIterable {
    /// Non-independent mode: logged in to the IM service.
    case imSession = 0
    /// Independent mode with username and token.
    case independent = 1
    /// Independent mode without username: a generated account that may not send.
    case anonymous = 2
}

/// One client connection acting on the room: who, how authenticated, which device and edge.
public struct SessionIdentity: Sendable, Hashable {
    public var userId: String
    public var authMode: AuthMode
    public var sessionId: String
    public var edgeId: String

    public init(userId: String, authMode: AuthMode = .imSession, sessionId: String, edgeId: String) {
        self.userId = userId
        self.authMode = authMode
        self.sessionId = sessionId
        self.edgeId = edgeId
    }
}

/// Who issued a command: a client session, or the app server (also used for the cluster's own
/// commands such as a lost edge), which may do everything the server API allows.
public enum CommandActor: Sendable, Hashable {
    case appServer
    case session(SessionIdentity)
}

/// What the Raft log supplies besides the command: the command's place in its shard, its timestamp (the
/// only clock the state machine ever sees) and the acting identity.
public struct ApplyContext: Sendable, Hashable {
    /// 1 for the first command the shard ever applied, then one more for each (an entry may carry several
    /// commands, so this is not the entry's log index). Messages take it as their `serverId`.
    public var commandIndex: UInt64
    /// Milliseconds since the Unix epoch, fixed by the leader when it proposed the entry.
    public var timestamp: Int64
    public var actor: CommandActor

    public init(commandIndex: UInt64, timestamp: Int64, actor: CommandActor) {
        self.commandIndex = commandIndex
        self.timestamp = timestamp
        self.actor = actor
    }

    /// The acting user id, empty for the app server.
    var actorUserId: String {
        if case .session(let s) = actor { return s.userId }
        return ""
    }
}

extension ApplyContext: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(commandIndex)
        w.write(timestamp)
        switch actor {
        case .appServer:
            w.write(UInt8(0))
        case .session(let s):
            w.write(UInt8(1))
            w.write(s.userId)
            w.write(s.authMode.rawValue)
            w.write(s.sessionId)
            w.write(s.edgeId)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        commandIndex = try r.readUInt64()
        timestamp = try r.readInt64()
        switch try r.readByte() {
        case 0:
            actor = .appServer
        case 1:
            let user = try r.readString()
            let mode: AuthMode = try r.readEnum()
            actor = .session(SessionIdentity(
                userId: user, authMode: mode, sessionId: try r.readString(), edgeId: try r.readString()))
        case let t:
            throw .badTag("CommandActor", UInt64(t))
        }
    }
}
