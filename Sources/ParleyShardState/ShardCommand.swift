import ParleyIM
import ParleyRooms
import ParleyWire

/// Issue 19: what a shard's log carries — a room command, or an IM command for the shard's users and teams
/// (docs/im.md). A room command's bytes are exactly what they were before IM existed, so every entry written
/// earlier reads unchanged; an IM command sits behind tag 200, which no room command uses, and is written
/// only once every node reads it (`PeerProtocol.Feature.im`).
public enum ShardCommand: Sendable, Hashable, BinaryCodable {
    case room(RoomCommand)
    /// `account`: the (app-scoped) user the command acts for — a client session may act only for its own
    /// user (checked at apply); empty for the relay's commands, which only the cluster (`appServer`) issues.
    case im(account: String, ImShardCommand)
    /// SPEC W2: the shard's webhook outbox (tag 201), proposed by its leader only once every node reads it
    /// (`PeerProtocol.Feature.webhookCopies`).
    case webhook(WebhookOutboxCommand)

    static let imTag: UInt8 = 200
    static let webhookTag: UInt8 = 201

    public func encode(to w: inout ByteWriter) {
        switch self {
        case .room(let c): w.write(c)
        case .im(let account, let c):
            w.write(Self.imTag)
            w.write(account)
            w.write(bytes: c.encoded())
        case .webhook(let c):
            w.write(Self.webhookTag)
            w.write(c)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        var peek = r
        switch try peek.readByte() {
        case Self.imTag: break
        case Self.webhookTag:
            _ = try r.readByte()
            self = .webhook(try r.read())
            return
        default:
            self = .room(try r.read())
            return
        }
        _ = try r.readByte()
        let account = try r.readString()
        self = .im(account: account, try ImShardCommand(decoding: try r.readBytes()))
    }

    public static func == (a: ShardCommand, b: ShardCommand) -> Bool { a.encoded() == b.encoded() }
    public func hash(into h: inout Hasher) { h.combine(encoded()) }
}

/// What a shard command answered.
public enum ShardOutcome: Sendable, Hashable, BinaryCodable {
    case room(ApplyOutcome)
    case im(Result<ImApplied, ImError>)
    /// A webhook outbox command applied (it answers nothing else).
    case webhook

    public var room: ApplyOutcome? {
        if case .room(let o) = self { return o }
        return nil
    }

    public var im: Result<ImApplied, ImError>? {
        if case .im(let r) = self { return r }
        return nil
    }

    /// A room command's answer as its caller reads it: a shard answers a room command with a room outcome
    /// always (a refused request key, SPEC A7, is one too).
    public var roomAnswer: ApplyOutcome { room ?? RoomsState.refusedRequest(.replayed) }

    /// An IM command's answer as its caller reads it. The only room outcome an IM command gets is the
    /// group's refusal of its request key before applying (SPEC A7).
    public var imAnswer: Result<ImApplied, ImError> {
        switch self {
        case .im(let result):
            return result
        case .room(let refused):
            let replayed = refused.errorCode == .requestReplayed
            return .failure(ImError(replayed ? .requestReplayed : .tooManyRequests,
                                    replayed ? RequestRefusal.replayed.message : RequestRefusal.ledgerFull.message))
        case .webhook:
            return .failure(ImError(.badParameter, "not an IM answer"))
        }
    }

    /// The room events it produced (none for IM).
    public var roomEvents: [RoomEvent] { room?.events ?? [] }

    public func encode(to w: inout ByteWriter) {
        switch self {
        case .room(let o): w.write(o)  // 0 or 1 first, as before
        case .im(let r): w.write(ShardCommand.imTag); ImAnswerCodec.write(r, into: &w)
        case .webhook: w.write(ShardCommand.webhookTag)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        var peek = r
        switch try peek.readByte() {
        case ShardCommand.imTag:
            _ = try r.readByte()
            self = .im(try ImAnswerCodec.read(&r))
        case ShardCommand.webhookTag:
            _ = try r.readByte()
            self = .webhook
        default:
            self = .room(try r.read())
        }
    }

    public static func == (a: ShardOutcome, b: ShardOutcome) -> Bool { a.encoded() == b.encoded() }
    public func hash(into h: inout Hasher) { h.combine(encoded()) }
}
