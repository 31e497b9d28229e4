import ParleyRooms

/// One decoded request frame: `{"id": n, "op": "...", ...fields}` (docs/protocol.md).
public struct ClientRequest: Sendable {
    public var id: Int64
    public var op: String
    public var fields: RequestFields

    /// Reads the envelope. Throws `(id, error)` so a frame with a readable id is answered under that id, and
    /// one without under id 0.
    public static func parse(_ text: String) throws(RejectedFrame) -> ClientRequest {
        guard let value = JSONValue.parse(text) else {
            throw RejectedFrame(id: 0, error: .malformedFrame("not JSON"))
        }
        guard case .object(let object) = value else {
            throw RejectedFrame(id: 0, error: .malformedFrame("not a JSON object"))
        }
        guard case .int(let id)? = object["id"] else {
            throw RejectedFrame(id: 0, error: .malformedFrame("no integer id"))
        }
        guard case .string(let op)? = object["op"] else {
            throw RejectedFrame(id: id, error: .malformedFrame("no string op"))
        }
        return ClientRequest(id: id, op: op, fields: RequestFields(object))
    }
}

/// A frame refused before it became a request.
public struct RejectedFrame: Error, Sendable {
    public var id: Int64
    public var error: ProtocolError
}

/// What a request asks the edge to do.
public enum ClientOp: Sendable {
    case hello(versions: [Int64])
    case ping
    case enter(EnterRequest)
    case authMode(roomId: String)
    /// Every other op: one room command for the room's shard. `exit` is one of them (the edge also forgets
    /// the session when it succeeds).
    case room(roomId: String, RoomCommand)
    /// Issue 19: an IM op (docs/protocol.md, "IM").
    case im(ImOp)

    /// Maps an op and its fields (unknown op → 4004, missing or mistyped field → 414).
    public init(_ request: ClientRequest) throws(ProtocolError) {
        let f = request.fields
        switch request.op {
        case "hello":
            guard let raw = f.values["versions"] else { throw ProtocolError.missingField("versions") }
            guard case .array(let items) = raw else { throw ProtocolError.wrongType("versions", "[int]") }
            var versions: [Int64] = []
            for item in items {
                guard case .int(let v) = item else { throw .wrongType("versions", "[int]") }
                versions.append(v)
            }
            _ = try f.optionalString("client")
            self = .hello(versions: versions)
        case "ping":
            self = .ping
        case "enter":
            self = .enter(try EnterRequest(f))
        case "authMode":
            self = .authMode(roomId: try f.string("roomId"))
        case let op where ImOp.names.contains(op):
            self = .im(try ImOp(request))
        default:
            let roomId: String
            do {
                roomId = try f.string("roomId")
            } catch {
                // A6: an unknown op is named as unknown even when it has no roomId (the mapping of an unknown
                // op throws `unknownOp` before it reads a field); a known one is missing its roomId.
                _ = try Self.command(op: request.op, roomId: "", f)
                throw error
            }
            self = .room(roomId: roomId, try Self.command(op: request.op, roomId: roomId, f))
        }
    }

    private static func command(op: String, roomId: String, _ f: RequestFields) throws(ProtocolError) -> RoomCommand {
        switch op {
        case "exit":
            return .exit(roomId: roomId)
        case "sendMessage":
            let typeName = try f.string("type", default: "text")
            guard let type = MessageType(protocolName: typeName), type != .notification else {
                throw .badValue("type", "clients cannot send \(typeName)")
            }
            let priorityName = try f.string("priority", default: "normal")
            guard let priority = MessagePriority(name: priorityName) else {
                throw .badValue("priority", "high, normal or low")
            }
            return .sendMessage(SendMessage(
                roomId: roomId, type: type, clientMessageId: try f.string("clientMessageId", default: ""),
                body: try f.string("body"), ext: try f.string("ext", default: ""), priority: priority))
        case "fetchHistory":
            let order = try f.string("order", default: "desc")
            guard order == "desc" || order == "asc" else { throw .badValue("order", "desc or asc") }
            var types: [MessageType] = []
            if f.values["types"] != nil, f.values["types"] != .null {
                for name in try f.strings("types") {
                    guard let t = MessageType(protocolName: name) else { throw .badValue("types", "unknown \(name)") }
                    types.append(t)
                }
            }
            return .fetchHistory(HistoryQuery(
                roomId: roomId, startTime: try f.int("startTime", default: 0), limit: try limit(f),
                ascending: order == "asc", types: types))
        case "fetchRoomInfo":
            return .fetchRoomInfo(roomId: roomId)
        case "updateRoomInfo":
            var level: QueueModificationLevel?
            if let raw = try f.optionalInt("queueLevel") {
                guard let l = QueueModificationLevel(rawValue: UInt8(clamping: raw)), raw >= 0 else {
                    throw .badValue("queueLevel", "0 or 1")
                }
                level = l
            }
            return .updateRoom(UpdateRoom(
                roomId: roomId, name: try f.optionalString("name"), announcement: try f.optionalString("announcement"),
                broadcastUrl: try f.optionalString("broadcastUrl"), ext: try f.optionalString("ext"),
                queueModificationLevel: level, needNotify: try f.bool("needNotify", default: true),
                notifyExt: try f.string("notifyExt", default: "")))
        case "fetchMembers":
            let kind: MemberQueryKind
            switch try f.string("type") {
            case "regular": kind = .regular
            case "temp": kind = .temp
            case "regularOnline": kind = .regularOnline
            case "unregularReversed": kind = .unregularReversedOrder
            case let other: throw .badValue("type", "unknown member list \(other)")
            }
            return .fetchMembers(FetchMembers(
                roomId: roomId, kind: kind, anchor: try f.unsigned("anchor", default: 0), limit: try limit(f)))
        case "fetchMembersByIds":
            return .fetchMembersByIds(RoomUsers(roomId: roomId, userIds: try f.strings("userIds")))
        case "updateMyMemberInfo":
            return .updateMyMemberInfo(UpdateMyMemberInfo(
                roomId: roomId, nickname: try f.optionalString("nickname"), avatar: try f.optionalString("avatar"),
                ext: try f.optionalString("ext"), needNotify: try f.bool("needNotify", default: true),
                notifyExt: try f.string("notifyExt", default: "")))
        case "markManager":
            return .markManager(try memberSwitch(roomId, f))
        case "markNormal":
            return .markCommon(try memberSwitch(roomId, f))
        case "setBlacklist":
            return .setBlocked(try memberSwitch(roomId, f))
        case "setMute":
            return .setMuted(try memberSwitch(roomId, f))
        case "setTempMute":
            return .setTempMute(MemberUpdate(
                roomId: roomId, userId: try f.string("userId"), enable: true, duration: try f.unsigned("duration"),
                needNotify: try f.bool("needNotify", default: true), notifyExt: try f.string("notifyExt", default: "")))
        case "kick":
            return .kick(MemberUpdate(
                roomId: roomId, userId: try f.string("userId"), notifyExt: try f.string("notifyExt", default: "")))
        case "setRoomMute":
            return .setRoomMute(RoomSwitch(
                roomId: roomId, enable: try f.bool("enable"), needNotify: try f.bool("needNotify", default: true),
                notifyExt: try f.string("notifyExt", default: "")))
        case "updateAllowlist":
            return .updateAllowlist(RoomSwitch(roomId: roomId, enable: try f.bool("enable"),
                                               userIds: try f.strings("userIds")))
        case "queueList":
            return .queueList(roomId: roomId)
        case "queueOffer":
            return .queueOffer(QueueOffer(roomId: roomId, key: try f.string("key"), value: try f.string("value"),
                                          transient: try f.bool("transient", default: false)))
        case "queueBatchUpdate":
            var elements: [QueueEntry] = []
            for e in try f.objects("elements") {
                elements.append(QueueEntry(key: try e.string("key"), value: try e.string("value")))
            }
            return .queueBatchUpdate(QueueBatchUpdate(
                roomId: roomId, elements: elements, needNotify: try f.bool("needNotify", default: true),
                notifyExt: try f.string("notifyExt", default: "")))
        case "queuePoll":
            return .queuePoll(roomId: roomId, key: try f.string("key", default: ""))
        case "queueDrop":
            return .queueDrop(roomId: roomId)
        default:
            throw .unknownOp(op)
        }
    }

    private static func limit(_ f: RequestFields) throws(ProtocolError) -> Int {
        let l = try f.int("limit")
        guard l >= 0, l <= Int64(Int32.max) else { throw .badValue("limit", "out of range") }
        return Int(l)
    }

    private static func memberSwitch(_ roomId: String, _ f: RequestFields) throws(ProtocolError) -> MemberUpdate {
        MemberUpdate(roomId: roomId, userId: try f.string("userId"), enable: try f.bool("enable"),
                     notifyExt: try f.string("notifyExt", default: ""))
    }
}

/// E1 / E4 / E5 / X2: an `enter` request.
public struct EnterRequest: Sendable {
    public var roomId: String
    public var mode: AuthMode
    public var appKey: String
    /// Empty for anonymous.
    public var account: String
    public var token: String
    public var nickname: String?
    public var avatar: String?
    public var roomExt: String
    public var roomNotifyExt: String
    /// X2: the highest seq the client has seen in the room.
    public var lastSeq: UInt64?
    /// C5: the client's session on a draining edge this enter takes over (from its `reconnect` event).
    public var replacing: String

    init(_ f: RequestFields) throws(ProtocolError) {
        roomId = try f.string("roomId")
        let auth = try f.object("auth")
        let modeName = try auth.string("mode")
        guard let mode = AuthMode(protocolName: modeName) else {
            throw .badValue("auth.mode", "im, independent or anonymous")
        }
        self.mode = mode
        appKey = try auth.string("appKey")
        if mode == .anonymous {
            account = ""
            token = ""
        } else {
            account = try auth.string("account")
            // E4 on an IM login (issue 19): an `im` enter may leave the token out and ride on the connection's login.
            token = mode == .imSession ? try auth.string("token", default: "") : try auth.string("token")
        }
        nickname = try f.optionalString("nickname")
        avatar = try f.optionalString("avatar")
        roomExt = try f.string("roomExt", default: "")
        roomNotifyExt = try f.string("roomNotifyExt", default: "")
        replacing = try f.string("replacing", default: "")
        if let v = try f.optionalInt("lastSeq") {
            guard v >= 0 else { throw .badValue("lastSeq", "negative") }
            lastSeq = UInt64(v)
        } else {
            lastSeq = nil
        }
    }
}
