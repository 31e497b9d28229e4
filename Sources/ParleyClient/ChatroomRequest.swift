@_exported import ParleyJSON
import Foundation

/// One request of docs/protocol.md: an op and its fields, without the id (the connection numbers requests
/// as it sends them). Optional fields the caller leaves nil are left out, so the server's defaults apply
/// (`needNotify` true, exts "").
public struct ChatroomRequest: Sendable, Hashable {
    public var op: String
    public var fields: [String: JSONValue]

    public init(op: String, fields: [String: JSONValue] = [:]) {
        self.op = op
        self.fields = fields
    }

    /// The frame text for request `id`. Keys are sorted so equal requests give equal frames.
    public func frame(id: Int) -> String {
        var object = fields
        object["id"] = .int(Int64(id))
        object["op"] = .string(op)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a tree of JSONValue cannot fail (no non-finite doubles are ever put in a request).
        let data = (try? encoder.encode(JSONValue.object(object))) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private static func room(_ op: String, _ roomId: String, _ fields: [String: JSONValue?] = [:]) -> ChatroomRequest {
        var out: [String: JSONValue] = ["roomId": .string(roomId)]
        for (key, value) in fields { if let value { out[key] = value } }
        return ChatroomRequest(op: op, fields: out)
    }

    // MARK: Connection

    public static func hello(versions: [Int], client: String) -> ChatroomRequest {
        ChatroomRequest(op: "hello", fields: ["versions": .array(versions.map { .int(Int64($0)) }), "client": .string(client)])
    }

    public static let ping = ChatroomRequest(op: "ping")

    // MARK: Entering and leaving

    /// `replacing`: C5, the session on a draining edge this enter takes over (its `reconnect` event).
    public static func enter(_ request: ChatroomEnterRequest, lastSeq: Int64?, replacing: String? = nil) -> ChatroomRequest {
        room("enter", request.roomId, [
            "replacing": replacing.map(JSONValue.string),
            "auth": request.auth.json,
            "nickname": request.nickname.map(JSONValue.string),
            "avatar": request.avatar.map(JSONValue.string),
            "roomExt": request.roomExt.map(JSONValue.string),
            "roomNotifyExt": request.roomNotifyExt.map(JSONValue.string),
            "lastSeq": lastSeq.map(JSONValue.int),
        ])
    }

    public static func exit(roomId: String) -> ChatroomRequest { room("exit", roomId) }
    public static func authMode(roomId: String) -> ChatroomRequest { room("authMode", roomId) }

    // MARK: Messages

    public static func sendMessage(roomId: String, type: MessageType, body: String, ext: String?, clientMessageId: String?,
                                   priority: String? = nil) -> ChatroomRequest {
        room("sendMessage", roomId, [
            "type": .string(type.rawValue), "body": .string(body),
            "ext": ext.map(JSONValue.string), "clientMessageId": clientMessageId.map(JSONValue.string),
            "priority": priority.map(JSONValue.string),
        ])
    }

    public static func fetchHistory(roomId: String, query: HistoryQuery) -> ChatroomRequest {
        room("fetchHistory", roomId, [
            "startTime": .int(query.startTime), "limit": .int(Int64(query.limit)), "order": .string(query.order.rawValue),
            "types": query.types.map { JSONValue.array($0.map { .string($0.rawValue) }) },
        ])
    }

    // MARK: Room

    public static func fetchRoomInfo(roomId: String) -> ChatroomRequest { room("fetchRoomInfo", roomId) }

    public static func updateRoomInfo(roomId: String, update: RoomInfoUpdate, needNotify: Bool?, notifyExt: String?) -> ChatroomRequest {
        room("updateRoomInfo", roomId, [
            "name": update.name.map(JSONValue.string), "announcement": update.announcement.map(JSONValue.string),
            "broadcastUrl": update.broadcastUrl.map(JSONValue.string), "ext": update.ext.map(JSONValue.string),
            "queueLevel": update.queueLevel.map { .int(Int64($0)) },
            "needNotify": needNotify.map(JSONValue.bool), "notifyExt": notifyExt.map(JSONValue.string),
        ])
    }

    public static func setRoomMute(roomId: String, enable: Bool, needNotify: Bool?, notifyExt: String?) -> ChatroomRequest {
        room("setRoomMute", roomId, ["enable": .bool(enable), "needNotify": needNotify.map(JSONValue.bool), "notifyExt": notifyExt.map(JSONValue.string)])
    }

    public static func updateAllowlist(roomId: String, enable: Bool, userIds: [String]) -> ChatroomRequest {
        room("updateAllowlist", roomId, ["enable": .bool(enable), "userIds": .array(userIds.map(JSONValue.string))])
    }

    // MARK: Members

    public static func fetchMembers(roomId: String, type: MemberQueryType, anchor: Int64?, limit: Int) -> ChatroomRequest {
        room("fetchMembers", roomId, ["type": .string(type.rawValue), "anchor": anchor.map(JSONValue.int), "limit": .int(Int64(limit))])
    }

    public static func fetchMembersByIds(roomId: String, userIds: [String]) -> ChatroomRequest {
        room("fetchMembersByIds", roomId, ["userIds": .array(userIds.map(JSONValue.string))])
    }

    public static func updateMyMemberInfo(roomId: String, update: MemberInfoUpdate, needNotify: Bool?, notifyExt: String?) -> ChatroomRequest {
        room("updateMyMemberInfo", roomId, [
            "nickname": update.nickname.map(JSONValue.string), "avatar": update.avatar.map(JSONValue.string),
            "ext": update.ext.map(JSONValue.string),
            "needNotify": needNotify.map(JSONValue.bool), "notifyExt": notifyExt.map(JSONValue.string),
        ])
    }

    /// The four role switches share one shape: markManager, markNormal, setBlacklist, setMute.
    public static func roleSwitch(_ op: RoleSwitch, roomId: String, userId: String, enable: Bool, notifyExt: String?) -> ChatroomRequest {
        room(op.rawValue, roomId, ["userId": .string(userId), "enable": .bool(enable), "notifyExt": notifyExt.map(JSONValue.string)])
    }

    public enum RoleSwitch: String, Sendable, CaseIterable {
        case markManager, markNormal, setBlacklist, setMute
    }

    public static func setTempMute(roomId: String, userId: String, duration: Int64, needNotify: Bool?, notifyExt: String?) -> ChatroomRequest {
        room("setTempMute", roomId, [
            "userId": .string(userId), "duration": .int(duration),
            "needNotify": needNotify.map(JSONValue.bool), "notifyExt": notifyExt.map(JSONValue.string),
        ])
    }

    public static func kick(roomId: String, userId: String, notifyExt: String?) -> ChatroomRequest {
        room("kick", roomId, ["userId": .string(userId), "notifyExt": notifyExt.map(JSONValue.string)])
    }

    // MARK: Queue

    public static func queueList(roomId: String) -> ChatroomRequest { room("queueList", roomId) }

    public static func queueOffer(roomId: String, element: QueueElement, transient: Bool?) -> ChatroomRequest {
        room("queueOffer", roomId, ["key": .string(element.key), "value": .string(element.value), "transient": transient.map(JSONValue.bool)])
    }

    public static func queueBatchUpdate(roomId: String, elements: [QueueElement], needNotify: Bool?, notifyExt: String?) -> ChatroomRequest {
        room("queueBatchUpdate", roomId, [
            "elements": .array(elements.map { .object(["key": .string($0.key), "value": .string($0.value)]) }),
            "needNotify": needNotify.map(JSONValue.bool), "notifyExt": notifyExt.map(JSONValue.string),
        ])
    }

    /// `key` nil or "" takes the head of the queue.
    public static func queuePoll(roomId: String, key: String?) -> ChatroomRequest {
        room("queuePoll", roomId, ["key": key.map(JSONValue.string)])
    }

    public static func queueDrop(roomId: String) -> ChatroomRequest { room("queueDrop", roomId) }
}
