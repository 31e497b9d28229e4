import Collections
import ParleyIM
import ParleyRooms
import ParleyWire

/// SPEC W2: the after-event callbacks an app wants, as a shard keeps them (`WebhookSettings.Event` in the meta
/// state maps onto these; the shard does not import the meta state).
public struct WebhookCopyKinds: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let message = WebhookCopyKinds(rawValue: 1 << 0)
    public static let enter = WebhookCopyKinds(rawValue: 1 << 1)
    public static let exit = WebhookCopyKinds(rawValue: 1 << 2)
    public static let create = WebhookCopyKinds(rawValue: 1 << 3)
    public static let close = WebhookCopyKinds(rawValue: 1 << 4)
    public static let update = WebhookCopyKinds(rawValue: 1 << 5)
    public static let role = WebhookCopyKinds(rawValue: 1 << 6)
    public static let mute = WebhookCopyKinds(rawValue: 1 << 7)
    public static let queue = WebhookCopyKinds(rawValue: 1 << 8)
    public static let p2p = WebhookCopyKinds(rawValue: 1 << 9)
    public static let team = WebhookCopyKinds(rawValue: 1 << 10)

    /// The kind an event is delivered as (nil: none; enter, exit and kick notifications are told as
    /// `enter` / `exit` with the reason instead).
    public static func of(_ event: WebhookEvent) -> WebhookCopyKinds? {
        switch event {
        case .room(let activity): of(activity)
        case .im(let m): m.teamId == nil ? .p2p : .team
        }
    }

    static func of(_ activity: RoomActivity) -> WebhookCopyKinds? {
        switch activity {
        case .message: return .message
        case .entered: return .enter
        case .left: return .exit
        case .created: return .create
        case .updated: return .update
        case .notification(_, let n):
            switch n.type {
            case .closed: return .close
            case .infoUpdated, .memberInfoUpdated: return .update
            case .addManager, .removeManager, .addCommon, .removeCommon: return .role
            case .addMute, .removeMute, .addTempMute, .removeTempMute, .roomMuted, .roomUnmuted, .addBlock, .removeBlock:
                return .mute
            case .queueChange, .queueBatchChange: return .queue
            case .enter, .exit, .kicked: return nil
            }
        }
    }
}

/// SPEC W2: a one-to-one message (stored in its receiver's log, on the receiver's shard) or a team message
/// (on the team's shard), as its app server hears of it.
public struct ImMessageCopy: Sendable, Hashable {
    public var from: String
    /// The receiver of a one-to-one message (nil for a team message).
    public var to: String?
    /// The team of a team message (nil for a one-to-one message).
    public var teamId: String?
    public var clientMessageId: String
    public var type: String
    public var body: String
    public var ext: String
    /// The receiver's log sequence, or the team log's: the conversation's order.
    public var seq: UInt64

    public init(from: String, to: String?, teamId: String?, clientMessageId: String, type: String, body: String,
                ext: String, seq: UInt64) {
        self.from = from
        self.to = to
        self.teamId = teamId
        self.clientMessageId = clientMessageId
        self.type = type
        self.body = body
        self.ext = ext
        self.seq = seq
    }
}

/// What an app server hears of: something in a room, or a one-to-one or team message.
public enum WebhookEvent: Sendable, Hashable {
    case room(RoomActivity)
    case im(ImMessageCopy)

    /// The app's namespace (`AppScope`): the room's, or the sender's.
    public var namespace: String {
        switch self {
        case .room(let a): AppScope.namespace(of: a.roomId)
        case .im(let m): AppScope.namespace(of: m.from)
        }
    }
}

/// One event waiting for its app server, at its place in the shard's log: its id.
public struct WebhookCopy: Sendable, Hashable {
    public var position: WebhookPosition
    /// The entry's time (ms).
    public var time: Int64
    public var event: WebhookEvent

    public init(position: WebhookPosition, time: Int64, event: WebhookEvent) {
        self.position = position
        self.time = time
        self.event = event
    }
}

/// An event's place in its shard's log — the command's index and the event's place among what that command
/// did — unique in the shard for ever, so an app server drops a redelivery by it; a box's `trim` goes through
/// one.
public struct WebhookPosition: Sendable, Hashable, Comparable {
    public var commandIndex: UInt64
    public var ordinal: UInt32

    public init(commandIndex: UInt64, ordinal: UInt32) {
        self.commandIndex = commandIndex
        self.ordinal = ordinal
    }

    public static func < (a: WebhookPosition, b: WebhookPosition) -> Bool {
        (a.commandIndex, a.ordinal) < (b.commandIndex, b.ordinal)
    }
}

/// SPEC W2 / W4: per app (by room namespace, `AppScope`), what its app server has yet to be told, in log
/// order — replicated with the shard, so a new leader, a restart or a node that catches up by snapshot
/// delivers from the last acknowledged event and never skips one. The shard's leader posts a box's oldest
/// events and proposes `trim` once the app server took them (`delivered`), or when they are older than the
/// documented age (dropped, counted). A box holds at most `maxPending`; past that the oldest go, counted.
public struct WebhookOutbox: Sendable, Hashable {
    public struct Box: Sendable, Hashable {
        public var kinds: WebhookCopyKinds
        public var pending: Deque<WebhookCopy> = []
        /// Events dropped unsent (the bound or the age), over the box's life.
        public var dropped: UInt64 = 0
        /// Events the app server took, over the box's life.
        public var delivered: UInt64 = 0
    }

    /// W4: at most this many events wait per app and shard.
    public static let maxPending = 10_000

    public private(set) var boxes: [String: Box] = [:]

    public init() {}

    public var isEmpty: Bool { boxes.isEmpty }

    /// What one command of the shard did, kept for the apps that want it.
    mutating func keep(_ events: [WebhookEvent], context: ApplyContext) {
        var ordinal: UInt32 = 0
        for e in events {
            defer { ordinal &+= 1 }
            let namespace = e.namespace
            // Nothing of the box is held in a local while it changes: its queue would be copied whole (a dead app
            // server's backlog made every message cost a copy of it).
            guard let kinds = boxes[namespace]?.kinds, let kind = WebhookCopyKinds.of(e), kinds.contains(kind) else { continue }
            let position = WebhookPosition(commandIndex: context.commandIndex, ordinal: ordinal)
            boxes[namespace]!.pending.append(WebhookCopy(position: position, time: context.timestamp, event: e))
            if boxes[namespace]!.pending.count > Self.maxPending {
                boxes[namespace]!.pending.removeFirst()
                boxes[namespace]!.dropped += 1
            }
        }
    }

    mutating func apply(_ command: WebhookOutboxCommand) {
        switch command {
        case .subscribe(let namespace, let kinds):
            if kinds.isEmpty {
                boxes[namespace] = nil
            } else if boxes[namespace] == nil {
                boxes[namespace] = Box(kinds: kinds)
            } else {
                boxes[namespace]!.kinds = kinds
                boxes[namespace]!.pending.removeAll { WebhookCopyKinds.of($0.event).map(kinds.contains) != true }
            }
        case .trim(let namespace, let through, let delivered):
            guard let count = boxes[namespace]?.pending.prefix(while: { $0.position <= through }).count, count > 0 else { return }
            boxes[namespace]!.pending.removeFirst(count)
            if delivered { boxes[namespace]!.delivered += UInt64(count) } else { boxes[namespace]!.dropped += UInt64(count) }
        }
    }
}

/// The commands of a shard's webhook outbox (shard command tag 201, peer protocol 10).
public enum WebhookOutboxCommand: Sendable, Hashable {
    /// The app of `namespace` wants these kinds from now on (none: its box goes, with what it held).
    case subscribe(namespace: String, kinds: WebhookCopyKinds)
    /// The events up to `through` left the box: taken by the app server (`delivered`), or dropped for age.
    case trim(namespace: String, through: WebhookPosition, delivered: Bool)
}

extension WebhookPosition: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(commandIndex)
        w.write(UInt64(ordinal))
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        commandIndex = try r.readUInt64()
        let o = try r.readUInt64()
        guard o <= UInt64(UInt32.max) else { throw .badTag("WebhookPosition.ordinal", o) }
        ordinal = UInt32(o)
    }
}

extension WebhookOutboxCommand: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .subscribe(let namespace, let kinds):
            w.write(UInt8(1)); w.write(namespace); w.write(UInt64(kinds.rawValue))
        case .trim(let namespace, let through, let delivered):
            w.write(UInt8(2)); w.write(namespace); w.write(through); w.write(delivered)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 1:
            let namespace = try r.readString()
            self = .subscribe(namespace: namespace, kinds: WebhookCopyKinds(rawValue: UInt16(truncatingIfNeeded: try r.readUInt64())))
        case 2:
            self = .trim(namespace: try r.readString(), through: try r.read(), delivered: try r.readBool())
        case let t: throw .badTag("WebhookOutboxCommand", UInt64(t))
        }
    }
}

extension WebhookOutbox: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(UInt64(boxes.count))
        for namespace in boxes.keys.sorted() {
            let box = boxes[namespace]!
            w.write(namespace)
            w.write(UInt64(box.kinds.rawValue))
            w.write(box.dropped)
            w.write(box.delivered)
            w.write(UInt64(box.pending.count))
            for c in box.pending {
                w.write(c.position)
                w.write(c.time)
                w.write(c.event)
            }
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        let count = try r.readUInt64()
        for _ in 0..<count {
            let namespace = try r.readString()
            var box = Box(kinds: WebhookCopyKinds(rawValue: UInt16(truncatingIfNeeded: try r.readUInt64())))
            box.dropped = try r.readUInt64()
            box.delivered = try r.readUInt64()
            let n = try r.readUInt64()
            guard n <= UInt64(Self.maxPending) else { throw .badTag("WebhookOutbox.pending", n) }
            for _ in 0..<n {
                box.pending.append(WebhookCopy(position: try r.read(), time: try r.readInt64(), event: try r.read()))
            }
            boxes[namespace] = box
        }
    }
}

extension WebhookEvent: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .room(let a):
            w.write(UInt8(1))
            w.write(a)
        case .im(let m):
            w.write(UInt8(2))
            w.write(m.from)
            w.write(m.to)
            w.write(m.teamId)
            w.write(m.clientMessageId)
            w.write(m.type)
            w.write(m.body)
            w.write(m.ext)
            w.write(m.seq)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 1: self = .room(try r.read())
        case 2:
            self = .im(ImMessageCopy(from: try r.readString(), to: try r.readOptionalString(), teamId: try r.readOptionalString(),
                                     clientMessageId: try r.readString(), type: try r.readString(), body: try r.readString(),
                                     ext: try r.readString(), seq: try r.readUInt64()))
        case let t: throw .badTag("WebhookEvent", UInt64(t))
        }
    }
}
