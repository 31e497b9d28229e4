import ParleyWire

/// SPEC W2: why a user left a room, as the app server is told (`room.exit`).
public enum LeaveReason: UInt8, Sendable, CaseIterable {
    /// The user's last session exited.
    case exit = 1
    /// A manager, the app server, a block or a close removed the user.
    case kicked = 2
    /// The user's last session was lost with its connection or its edge.
    case disconnected = 3
    /// The room was closed.
    case roomClosed = 4

    public var name: String {
        switch self {
        case .exit: "exit"
        case .kicked: "kicked"
        case .disconnected: "disconnected"
        case .roomClosed: "closed"
        }
    }
}

/// SPEC W2: what happened in a room as its app server hears of it, whether or not clients were told: a
/// message, a user's first session entering or last one leaving (with why), the room made, and every
/// notification — also the ones a command asked not to send to the room (`needNotify: false`), which then
/// carry seq 0. A shard keeps these for its apps' after-event callbacks only while some app wants them
/// (`RoomsState.collectsActivity`); they are scratch of one command, not state.
public enum RoomActivity: Sendable, Hashable {
    case message(roomId: String, ChatMessage)
    case entered(roomId: String, userId: String)
    case left(roomId: String, userId: String, reason: LeaveReason)
    case created(roomId: String, creator: String)
    /// A room's info changed without a notification (`needNotify: false`).
    case updated(roomId: String)
    indirect case notification(roomId: String, RoomNotification)

    public var roomId: String {
        switch self {
        case .message(let id, _), .entered(let id, _), .left(let id, _, _), .created(let id, _), .updated(let id),
             .notification(let id, _):
            id
        }
    }
}

extension RoomActivity: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .message(let id, let m) where m.priority == .normal: w.write(UInt8(1)); w.write(id); w.write(m)
        case .message(let id, let m): w.write(UInt8(7)); w.write(id); w.write(m); w.write(m.priority.rawValue)
        case .entered(let id, let user): w.write(UInt8(2)); w.write(id); w.write(user)
        case .left(let id, let user, let reason): w.write(UInt8(3)); w.write(id); w.write(user); w.write(reason.rawValue)
        case .created(let id, let creator): w.write(UInt8(4)); w.write(id); w.write(creator)
        case .updated(let id): w.write(UInt8(5)); w.write(id)
        case .notification(let id, let n): w.write(UInt8(6)); w.write(id); w.write(n)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 1: self = .message(roomId: try r.readString(), try r.read())
        case 7: self = .message(roomId: try r.readString(), try ChatMessage.withPriority(&r))
        case 2: self = .entered(roomId: try r.readString(), userId: try r.readString())
        case 3:
            let id = try r.readString(), user = try r.readString()
            let raw = try r.readByte()
            guard let reason = LeaveReason(rawValue: raw) else { throw .badTag("LeaveReason", UInt64(raw)) }
            self = .left(roomId: id, userId: user, reason: reason)
        case 4: self = .created(roomId: try r.readString(), creator: try r.readString())
        case 5: self = .updated(roomId: try r.readString())
        case 6: self = .notification(roomId: try r.readString(), try r.read())
        case let t: throw .badTag("RoomActivity", UInt64(t))
        }
    }
}
