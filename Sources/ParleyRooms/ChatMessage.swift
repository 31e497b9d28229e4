import ParleyWire

/// N1 / N5: message types; `notification` marks server notifications in history filters and
/// can never be sent by a client (N2).
public enum MessageType: UInt8, Sendable, CaseIterable {
    case text = 0, image = 1, audio = 2, video = 3, location = 4, notification = 5, file = 6,
         tip = 10, custom = 100
}

/// SPEC D3: how much a message matters when a room speaks faster than its members can read. An edge above its
/// room's delivered-rate ceiling sheds low first, then normal; high (and every notification) is never shed. A
/// slow connection (D2) drops only low ones before it is closed. Raw values are the wire format.
public enum MessagePriority: UInt8, Sendable, CaseIterable, Comparable {
    case normal = 0, high = 1, low = 2

    /// The name clients and the server API use.
    public var name: String {
        switch self {
        case .normal: "normal"
        case .high: "high"
        case .low: "low"
        }
    }

    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    private var rank: Int {
        switch self {
        case .low: 0
        case .normal: 1
        case .high: 2
        }
    }

    public static func < (a: MessagePriority, b: MessagePriority) -> Bool { a.rank < b.rank }
}

/// A chat message as stored in history and fanned out to the room.
///
/// A final class with constant fields: the same message sits in the room's history and in the
/// event, and a send copies one reference instead of retaining seven strings twice.
public final class ChatMessage: Sendable, Hashable {
    /// The room sequence number (X2).
    public let seq: UInt64
    /// The shard's index of the command that sent it (`ApplyContext.commandIndex`): unique and increasing within the shard.
    public let serverId: UInt64
    public let time: Int64
    public let senderId: String
    public let senderNickname: String
    public let senderAvatar: String
    /// E1: the sender session's entry-scoped roomExt.
    public let senderRoomExt: String
    public let type: MessageType
    /// The client's own id for the message, for de-duplication on the client.
    public let clientMessageId: String
    public let body: String
    public let ext: String
    /// D3: what the edges may shed above a room's ceiling.
    public let priority: MessagePriority

    public init(seq: UInt64, serverId: UInt64, time: Int64, senderId: String, senderNickname: String,
                senderAvatar: String, senderRoomExt: String, type: MessageType, clientMessageId: String,
                body: String, ext: String, priority: MessagePriority = .normal) {
        self.seq = seq
        self.serverId = serverId
        self.time = time
        self.senderId = senderId
        self.senderNickname = senderNickname
        self.senderAvatar = senderAvatar
        self.senderRoomExt = senderRoomExt
        self.type = type
        self.clientMessageId = clientMessageId
        self.body = body
        self.ext = ext
        self.priority = priority
    }

    /// Value equality: two messages are equal when every field is.
    public static func == (a: ChatMessage, b: ChatMessage) -> Bool {
        a === b || (a.seq == b.seq && a.serverId == b.serverId && a.time == b.time && a.senderId == b.senderId
            && a.senderNickname == b.senderNickname && a.senderAvatar == b.senderAvatar
            && a.senderRoomExt == b.senderRoomExt && a.type == b.type && a.clientMessageId == b.clientMessageId
            && a.body == b.body && a.ext == b.ext && a.priority == b.priority)
    }

    public func hash(into h: inout Hasher) {
        h.combine(seq)
        h.combine(serverId)
        h.combine(time)
        h.combine(senderId)
        h.combine(body)
    }
}

/// N5: one stored history entry.
public enum HistoryItem: Sendable, Hashable {
    case message(ChatMessage)
    indirect case notification(RoomNotification)

    public var seq: UInt64 {
        switch self {
        case .message(let m): return m.seq
        case .notification(let n): return n.seq
        }
    }

    public var time: Int64 {
        switch self {
        case .message(let m): return m.time
        case .notification(let n): return n.time
        }
    }

    public var messageType: MessageType {
        switch self {
        case .message(let m): return m.type
        case .notification: return .notification
        }
    }
}

/// One item a command added to a room's history, for the node's durable history store (N5).
public struct StoredHistoryItem: Sendable, Hashable {
    public var roomId: String
    public var item: HistoryItem

    public init(roomId: String, item: HistoryItem) {
        self.roomId = roomId
        self.item = item
    }
}

extension ChatMessage {
    /// The same message with another priority (the codec reads the priority after the message).
    func with(priority: MessagePriority) -> ChatMessage {
        guard priority != self.priority else { return self }
        return ChatMessage(seq: seq, serverId: serverId, time: time, senderId: senderId, senderNickname: senderNickname,
                    senderAvatar: senderAvatar, senderRoomExt: senderRoomExt, type: type,
                    clientMessageId: clientMessageId, body: body, ext: ext, priority: priority)
    }
}

extension ChatMessage {
    /// A message followed by its priority, which is not normal (the later tag of `HistoryItem`, `RoomEventKind`
    /// and `RoomActivity`: normal ones keep the first encoding).
    static func withPriority(_ r: inout ByteReader) throws(CodecError) -> ChatMessage {
        let m: ChatMessage = try r.read()
        let priority: MessagePriority = try r.readEnum()
        guard priority != .normal else { throw .invalidValue("a message with its priority written out as normal") }
        return m.with(priority: priority)
    }
}

/// Without the priority: `HistoryItem`, `RoomEventKind` and `RoomActivity` write it after the message when it is
/// not normal.
extension ChatMessage: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(seq)
        w.write(serverId)
        w.write(time)
        w.write(senderId)
        w.write(senderNickname)
        w.write(senderAvatar)
        w.write(senderRoomExt)
        w.write(type.rawValue)
        w.write(clientMessageId)
        w.write(body)
        w.write(ext)
    }

    public convenience init(from r: inout ByteReader) throws(CodecError) {
        self.init(seq: try r.readUInt64(), serverId: try r.readUInt64(), time: try r.readInt64(),
                  senderId: try r.readString(), senderNickname: try r.readString(),
                  senderAvatar: try r.readString(), senderRoomExt: try r.readString(), type: try r.readEnum(),
                  clientMessageId: try r.readString(), body: try r.readString(), ext: try r.readString())
    }
}

extension HistoryItem: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        // A normal message keeps its first encoding (tag 0), so nodes that predate D3 still read it; one with
        // another priority (tag 2) exists only once every node reads it (`PeerProtocol.Feature.messagePriority`).
        case .message(let m) where m.priority == .normal:
            w.write(UInt8(0))
            w.write(m)
        case .message(let m):
            w.write(UInt8(2))
            w.write(m)
            w.write(m.priority.rawValue)
        case .notification(let n):
            w.write(UInt8(1))
            w.write(n)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0: self = .message(try r.read())
        case 1: self = .notification(try r.read())
        case 2: self = .message(try ChatMessage.withPriority(&r))
        case let t: throw .badTag("HistoryItem", UInt64(t))
        }
    }
}
