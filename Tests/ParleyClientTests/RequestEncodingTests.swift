import Foundation
import Testing
import ParleyClient

/// The frame of every op in docs/protocol.md, read back as JSON and compared field by field.
@Suite struct RequestEncodingTests {
    func sent(_ request: ChatroomRequest, id: Int = 5) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(request.frame(id: id).utf8))
    }

    func expect(_ request: ChatroomRequest, _ fields: [String: JSONValue], sourceLocation: SourceLocation = #_sourceLocation) throws {
        var all = fields
        all["id"] = 5
        all["op"] = .string(request.op)
        #expect(try sent(request) == .object(all), sourceLocation: sourceLocation)
    }

    @Test func helloAndPing() throws {
        try expect(.hello(versions: [1], client: "parley-swift/0.1"), ["versions": [1], "client": "parley-swift/0.1"])
        try expect(.ping, [:])
        #expect(ChatroomRequest.ping.op == "ping")
    }

    @Test func enterWithEveryAuthMode() throws {
        let full = ChatroomEnterRequest(roomId: "r1", auth: .independent(appKey: "demo", account: "alice", token: "t0k"),
                                        nickname: "Alice", avatar: "a.png", roomExt: "vip", roomNotifyExt: "hello")
        try expect(.enter(full, lastSeq: nil), [
            "roomId": "r1", "nickname": "Alice", "avatar": "a.png", "roomExt": "vip", "roomNotifyExt": "hello",
            "auth": ["mode": "independent", "appKey": "demo", "account": "alice", "token": "t0k"],
        ])
        try expect(.enter(ChatroomEnterRequest(roomId: "r1", auth: .im(appKey: "demo", account: "bob", token: "s")), lastSeq: 41), [
            "roomId": "r1", "lastSeq": 41, "auth": ["mode": "im", "appKey": "demo", "account": "bob", "token": "s"],
        ])
        try expect(.enter(ChatroomEnterRequest(roomId: "r1", auth: .anonymous(appKey: "demo"), nickname: "Guest", avatar: "g.png"), lastSeq: nil), [
            "roomId": "r1", "nickname": "Guest", "avatar": "g.png", "auth": ["mode": "anonymous", "appKey": "demo"],
        ])
    }

    @Test func leavingAndAuthMode() throws {
        try expect(.exit(roomId: "r1"), ["roomId": "r1"])
        try expect(.authMode(roomId: "r1"), ["roomId": "r1"])
    }

    @Test func messagesAndHistory() throws {
        try expect(.sendMessage(roomId: "r1", type: .text, body: "hi", ext: nil, clientMessageId: "c-7"),
                   ["roomId": "r1", "type": "text", "body": "hi", "clientMessageId": "c-7"])
        try expect(.sendMessage(roomId: "r1", type: .custom, body: "{}", ext: "e", clientMessageId: nil),
                   ["roomId": "r1", "type": "custom", "body": "{}", "ext": "e"])
        try expect(.fetchHistory(roomId: "r1", query: HistoryQuery()), ["roomId": "r1", "startTime": 0, "limit": 100, "order": "desc"])
        try expect(.fetchHistory(roomId: "r1", query: HistoryQuery(startTime: 1_763_800_000_000, limit: 20, order: .asc, types: [.text, .notification])),
                   ["roomId": "r1", "startTime": 1_763_800_000_000, "limit": 20, "order": "asc", "types": ["text", "notification"]])
    }

    @Test func roomOps() throws {
        try expect(.fetchRoomInfo(roomId: "r1"), ["roomId": "r1"])
        try expect(.updateRoomInfo(roomId: "r1", update: RoomInfoUpdate(name: "n", announcement: "a", broadcastUrl: "b", ext: "e", queueLevel: 1),
                                   needNotify: false, notifyExt: "x"),
                   ["roomId": "r1", "name": "n", "announcement": "a", "broadcastUrl": "b", "ext": "e", "queueLevel": 1,
                    "needNotify": false, "notifyExt": "x"])
        // Fields left nil stay off the wire: the server keeps them (and defaults needNotify to true).
        try expect(.updateRoomInfo(roomId: "r1", update: RoomInfoUpdate(announcement: "only"), needNotify: nil, notifyExt: nil),
                   ["roomId": "r1", "announcement": "only"])
        try expect(.setRoomMute(roomId: "r1", enable: true, needNotify: true, notifyExt: "m"),
                   ["roomId": "r1", "enable": true, "needNotify": true, "notifyExt": "m"])
        try expect(.updateAllowlist(roomId: "r1", enable: false, userIds: ["a", "b"]), ["roomId": "r1", "enable": false, "userIds": ["a", "b"]])
    }

    @Test func memberOps() throws {
        try expect(.fetchMembers(roomId: "r1", type: .regularOnline, anchor: 9, limit: 50),
                   ["roomId": "r1", "type": "regularOnline", "anchor": 9, "limit": 50])
        for (type, wire) in [(MemberQueryType.regular, "regular"), (.temp, "temp"), (.unregularReversed, "unregularReversed")] {
            try expect(.fetchMembers(roomId: "r1", type: type, anchor: nil, limit: 10), ["roomId": "r1", "type": .string(wire), "limit": 10])
        }
        try expect(.fetchMembersByIds(roomId: "r1", userIds: ["a"]), ["roomId": "r1", "userIds": ["a"]])
        try expect(.updateMyMemberInfo(roomId: "r1", update: MemberInfoUpdate(nickname: "N", avatar: "A", ext: "E"), needNotify: true, notifyExt: "n"),
                   ["roomId": "r1", "nickname": "N", "avatar": "A", "ext": "E", "needNotify": true, "notifyExt": "n"])
        for op in ChatroomRequest.RoleSwitch.allCases {
            try expect(.roleSwitch(op, roomId: "r1", userId: "u", enable: true, notifyExt: "why"),
                       ["roomId": "r1", "userId": "u", "enable": true, "notifyExt": "why"])
            #expect(ChatroomRequest.roleSwitch(op, roomId: "r1", userId: "u", enable: false, notifyExt: nil).op == op.rawValue)
        }
        #expect(ChatroomRequest.RoleSwitch.allCases.map(\.rawValue) == ["markManager", "markNormal", "setBlacklist", "setMute"])
        try expect(.setTempMute(roomId: "r1", userId: "u", duration: 600, needNotify: false, notifyExt: nil),
                   ["roomId": "r1", "userId": "u", "duration": 600, "needNotify": false])
        try expect(.kick(roomId: "r1", userId: "u", notifyExt: "bye"), ["roomId": "r1", "userId": "u", "notifyExt": "bye"])
    }

    @Test func queueOps() throws {
        try expect(.queueList(roomId: "r1"), ["roomId": "r1"])
        try expect(.queueOffer(roomId: "r1", element: QueueElement(key: "k", value: "v"), transient: true),
                   ["roomId": "r1", "key": "k", "value": "v", "transient": true])
        try expect(.queueBatchUpdate(roomId: "r1", elements: [.init(key: "a", value: "1"), .init(key: "b", value: "2")], needNotify: true, notifyExt: "n"),
                   ["roomId": "r1", "elements": [["key": "a", "value": "1"], ["key": "b", "value": "2"]], "needNotify": true, "notifyExt": "n"])
        try expect(.queuePoll(roomId: "r1", key: nil), ["roomId": "r1"])
        try expect(.queuePoll(roomId: "r1", key: "k"), ["roomId": "r1", "key": "k"])
        try expect(.queueDrop(roomId: "r1"), ["roomId": "r1"])
    }

    @Test func everyOpOfTheProtocolTableIsCovered() {
        let ops = Set<String>([
            ChatroomRequest.hello(versions: [1], client: "").op, ChatroomRequest.ping.op,
            ChatroomRequest.enter(.init(roomId: "r", auth: .anonymous(appKey: "a")), lastSeq: nil).op,
            ChatroomRequest.exit(roomId: "r").op, ChatroomRequest.authMode(roomId: "r").op,
            ChatroomRequest.sendMessage(roomId: "r", type: .text, body: "", ext: nil, clientMessageId: nil).op,
            ChatroomRequest.fetchHistory(roomId: "r", query: .init()).op, ChatroomRequest.fetchRoomInfo(roomId: "r").op,
            ChatroomRequest.updateRoomInfo(roomId: "r", update: .init(), needNotify: nil, notifyExt: nil).op,
            ChatroomRequest.fetchMembers(roomId: "r", type: .temp, anchor: nil, limit: 1).op,
            ChatroomRequest.fetchMembersByIds(roomId: "r", userIds: []).op,
            ChatroomRequest.updateMyMemberInfo(roomId: "r", update: .init(), needNotify: nil, notifyExt: nil).op,
            ChatroomRequest.setTempMute(roomId: "r", userId: "u", duration: 0, needNotify: nil, notifyExt: nil).op,
            ChatroomRequest.kick(roomId: "r", userId: "u", notifyExt: nil).op,
            ChatroomRequest.setRoomMute(roomId: "r", enable: true, needNotify: nil, notifyExt: nil).op,
            ChatroomRequest.updateAllowlist(roomId: "r", enable: true, userIds: []).op,
            ChatroomRequest.queueList(roomId: "r").op, ChatroomRequest.queueOffer(roomId: "r", element: .init(key: "", value: ""), transient: nil).op,
            ChatroomRequest.queueBatchUpdate(roomId: "r", elements: [], needNotify: nil, notifyExt: nil).op,
            ChatroomRequest.queuePoll(roomId: "r", key: nil).op, ChatroomRequest.queueDrop(roomId: "r").op,
        ]).union(ChatroomRequest.RoleSwitch.allCases.map(\.rawValue))
        // The op column of docs/protocol.md, in table order.
        let table: Set<String> = [
            "hello", "ping", "enter", "exit", "authMode", "sendMessage", "fetchHistory", "fetchRoomInfo", "updateRoomInfo",
            "fetchMembers", "fetchMembersByIds", "updateMyMemberInfo", "markManager", "markNormal", "setBlacklist", "setMute",
            "setTempMute", "kick", "setRoomMute", "updateAllowlist", "queueList", "queueOffer", "queueBatchUpdate", "queuePoll", "queueDrop",
        ]
        #expect(ops == table)
    }
}
