import Foundation
import Testing
@testable import ParleyClient

/// Every object and event of docs/protocol.md decoded from literal JSON, as a server would write it.
@Suite struct DecodingTests {
    static let roomJSON = """
    {"roomId":"r1","name":"Lobby","announcement":"hi all","creator":"owner","ext":"{\\"k\\":1}","broadcastUrl":"rtmp://x",
     "queueLevel":1,"isMuted":true,"isOpen":true,"onlineUserCount":42,"seq":17}
    """
    static let memberJSON = """
    {"userId":"alice","nickname":"Alice","avatar":"a.png","ext":"e","type":"manager","isMuted":false,"isTempMuted":true,
     "tempMuteDuration":60,"isInBlackList":false,"isOnline":true,"enterTime":1763800000123,"pageKey":9}
    """
    static let messageJSON = """
    {"seq":42,"serverId":981,"time":1763800000123,"from":"alice","fromNickname":"Alice","fromAvatar":"a.png",
     "fromExt":"vip","type":"text","clientMessageId":"c-7","body":"hi","ext":"x"}
    """
    static func notificationJSON(type: Int, ext: String) -> String {
        """
        {"seq":43,"time":1763800000200,"type":\(type),"source":{"userId":"owner","nickname":"Owner"},"sourceExt":"se",
         "targets":[{"userId":"alice","nickname":"Alice"}],"notifyExt":"ne","ext":\(ext)}
        """
    }

    func decode<T: Decodable>(_: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(json.utf8))
    }

    func event(_ json: String) throws -> (String, Int64, ChatroomEvent?) {
        guard case .event(let roomId, let seq, let event) = try InboundFrame.decode(json) else {
            Issue.record("not an event: \(json)")
            return ("", -1, nil)
        }
        return (roomId, seq, event)
    }

    @Test func room() throws {
        let r = try decode(Room.self, Self.roomJSON)
        #expect(r == Room(roomId: "r1", name: "Lobby", announcement: "hi all", creator: "owner", ext: "{\"k\":1}",
                          broadcastUrl: "rtmp://x", queueLevel: 1, isMuted: true, isOpen: true, onlineUserCount: 42, seq: 17))
    }

    @Test func memberM3() throws {
        let m = try decode(Member.self, Self.memberJSON)
        #expect(m.userId == "alice" && m.nickname == "Alice" && m.avatar == "a.png" && m.ext == "e")
        #expect(m.type == .manager && !m.isMuted && m.isTempMuted && m.tempMuteDuration == 60)
        #expect(!m.isInBlackList && m.isOnline && m.enterTime == 1_763_800_000_123 && m.pageKey == 9)
        for kind in ["creator", "manager", "common", "limited", "visitor"] {
            let json = Self.memberJSON.replacingOccurrences(of: "\"manager\"", with: "\"\(kind)\"")
            #expect(try decode(Member.self, json).type.rawValue == kind)
        }
        #expect(throws: DecodingError.self) { try decode(Member.self, Self.memberJSON.replacingOccurrences(of: "\"manager\"", with: "\"boss\"")) }
    }

    @Test func messageN1() throws {
        let m = try decode(Message.self, Self.messageJSON)
        #expect(m.seq == 42 && m.serverId == 981 && m.time == 1_763_800_000_123)
        #expect(m.from == "alice" && m.fromNickname == "Alice" && m.fromAvatar == "a.png" && m.fromExt == "vip")
        #expect(m.type == .text && m.clientMessageId == "c-7" && m.body == "hi" && m.ext == "x")
        // A type this SDK does not know still decodes.
        #expect(try decode(Message.self, Self.messageJSON.replacingOccurrences(of: "\"text\"", with: "\"sticker\"")).type.rawValue == "sticker")
    }

    @Test func notificationN3WithEveryExt() throws {
        let plain = try decode(ChatroomNotification.self, Self.notificationJSON(type: 301, ext: "null"))
        #expect(plain.seq == 43 && plain.time == 1_763_800_000_200 && plain.type == .enter)
        #expect(plain.source == .init(userId: "owner", nickname: "Owner") && plain.sourceExt == "se")
        #expect(plain.targets == [.init(userId: "alice", nickname: "Alice")] && plain.notifyExt == "ne" && plain.ext == .none)

        #expect(try decode(ChatroomNotification.self, Self.notificationJSON(type: 314, ext: #"{"muteDuration":600}"#)).ext
                == .muteDuration(seconds: 600))
        #expect(try decode(ChatroomNotification.self, Self.notificationJSON(type: 317, ext: #"{"change":"offer","key":"k","value":"v"}"#)).ext
                == .queueChange(.offer, key: "k", value: "v"))
        #expect(try decode(ChatroomNotification.self, Self.notificationJSON(type: 317, ext: #"{"change":"drop"}"#)).ext
                == .queueChange(.drop, key: "", value: ""))
        let batch = try decode(ChatroomNotification.self, Self.notificationJSON(
            type: 320, ext: #"{"change":"partClear","elements":[{"key":"a","value":"1"},{"key":"b","value":"2"}]}"#))
        #expect(batch.type == .queueBatchChange)
        #expect(batch.ext == .queueBatch(.partClear, elements: [.init(key: "a", value: "1"), .init(key: "b", value: "2")]))
        #expect(try decode(ChatroomNotification.self, Self.notificationJSON(type: 317, ext: #"{"change":"batchUpdate","elements":[]}"#)).ext
                == .queueBatch(.batchUpdate, elements: []))
        #expect(throws: DecodingError.self) {
            try decode(ChatroomNotification.self, Self.notificationJSON(type: 317, ext: #"{"change":"shuffle"}"#))
        }
    }

    @Test func historyItemsOfBothKinds() throws {
        let message = Self.messageJSON.replacingOccurrences(of: "{\"seq\"", with: "{\"kind\":\"message\",\"seq\"")
        let notification = Self.notificationJSON(type: 302, ext: "null").replacingOccurrences(of: "{\"seq\"", with: "{\"kind\":\"notification\",\"seq\"")
        let items = try decode([HistoryItem].self, "[\(message),\(notification)]")
        #expect(items.map(\.seq) == [42, 43])
        guard case .message(let m) = items[0], case .notification(let n) = items[1] else {
            Issue.record("wrong kinds: \(items)")
            return
        }
        #expect(m.body == "hi" && n.type == .exit)
        #expect(throws: DecodingError.self) { try decode(HistoryItem.self, #"{"kind":"poll"}"#) }
    }

    @Test func answersOfEveryShape() throws {
        let enter = """
        {"id":3,"ok":true,"data":{"room":\(Self.roomJSON),"member":\(Self.memberJSON),"authMode":"anonymous",
         "account":"anon-1","resumed":false,"gapTooOld":true}}
        """
        guard case .answer(3, .success(let frame)) = try InboundFrame.decode(enter) else { Issue.record("not an answer"); return }
        let result = try InboundFrame.data(ChatroomEnterResult.self, from: frame)
        #expect(result.room.seq == 17 && result.member.userId == "alice" && result.authMode == .anonymous)
        #expect(result.account == "anon-1" && !result.resumed && result.gapTooOld)

        let sent = #"{"id":7,"ok":true,"data":{"seq":42,"time":1763800000123,"serverId":981}}"#
        guard case .answer(7, .success(let sentFrame)) = try InboundFrame.decode(sent) else { Issue.record("not an answer"); return }
        #expect(try InboundFrame.data(SendReceipt.self, from: sentFrame) == SendReceipt(seq: 42, time: 1_763_800_000_123, serverId: 981))

        let hello = #"{"id":1,"ok":true,"data":{"version":1,"heartbeatMs":25000,"idleTimeoutMs":75000,"maxFrameBytes":65536,"edge":"n1.1","connection":"n1.1#17"}}"#
        guard case .answer(1, .success(let helloFrame)) = try InboundFrame.decode(hello) else { Issue.record("not an answer"); return }
        let h = try InboundFrame.data(ChatroomClient.Hello.self, from: helloFrame)
        #expect(h.heartbeatMs == 25000 && h.idleTimeoutMs == 75000 && h.maxFrameBytes == 65536 && h.connection == "n1.1#17")

        let queue = #"{"id":9,"ok":true,"data":{"elements":[{"key":"k","value":"v"}]}}"#
        guard case .answer(9, .success) = try InboundFrame.decode(queue) else { Issue.record("not an answer"); return }

        let refused = #"{"id":7,"ok":false,"error":{"code":13004,"message":"the user is muted"}}"#
        guard case .answer(7, .failure(let error)) = try InboundFrame.decode(refused) else { Issue.record("not a failure"); return }
        #expect(error == ChatroomError(code: 13004, message: "the user is muted"))

        // A malformed request is answered with id 0 (docs/protocol.md).
        guard case .answer(0, .failure(let malformed)) = try InboundFrame.decode(#"{"id":0,"ok":false,"error":{"code":4000,"message":"bad"}}"#) else {
            Issue.record("not a failure")
            return
        }
        #expect(malformed.code == 4000)
    }

    @Test func messageAndNotificationEvents() throws {
        let (room, seq, message) = try event(#"{"event":"message","roomId":"r1","seq":42,"data":\#(Self.messageJSON)}"#)
        #expect(room == "r1" && seq == 42)
        guard case .message("r1", let m) = message else { Issue.record("\(String(describing: message))"); return }
        #expect(m.body == "hi")
        let (_, nseq, notification) = try event(#"{"event":"notification","roomId":"r1","seq":43,"data":\#(Self.notificationJSON(type: 318, ext: "null"))}"#)
        #expect(nseq == 43)
        guard case .notification("r1", let n) = notification else { Issue.record("\(String(describing: notification))"); return }
        #expect(n.type == .roomMuted)
    }

    @Test func kickedE9() throws {
        for (reason, expected) in [(1, KickReason.invalidRoom), (2, .byManager), (3, .byConflictLogin), (5, .blacklist)] {
            let (_, seq, e) = try event(#"{"event":"kicked","roomId":"r1","seq":0,"data":{"reason":\#(reason),"ext":"bye"}}"#)
            #expect(seq == 0)
            #expect(e == .kicked(roomId: "r1", reason: expected, ext: "bye"))
        }
    }

    @Test func statusE11() throws {
        #expect(try event(#"{"event":"status","roomId":"r1","seq":0,"data":{"status":"joined","memberCount":5,"time":99}}"#).2
                == .status(roomId: "r1", .joined(memberCount: 5, time: 99)))
        #expect(try event(#"{"event":"status","roomId":"r1","seq":0,"data":{"status":"quit"}}"#).2 == .status(roomId: "r1", .quit))
        #expect(try event(#"{"event":"status","roomId":"r1","seq":0,"data":{"status":"destroyed","type":1}}"#).2
                == .status(roomId: "r1", .destroyed(type: 1)))
    }

    @Test func memberChangeE12AndMultiLoginSyncE7() throws {
        let change = try event(#"{"event":"memberChange","roomId":"r1","seq":44,"data":{"actions":[{"userId":"a","action":"join"},{"userId":"b","action":"quit"}],"memberCount":3}}"#)
        #expect(change.1 == 44)
        #expect(change.2 == .memberChange(roomId: "r1", MemberChange(actions: [.init(userId: "a", action: .join), .init(userId: "b", action: .quit)], memberCount: 3)))
        #expect(try event(#"{"event":"multiLoginSync","roomId":"r1","seq":0,"data":{"joined":false,"reason":2,"time":5}}"#).2
                == .multiLoginSync(roomId: "r1", MultiLoginSync(joined: false, reason: 2, time: 5)))
        #expect(try event(#"{"event":"multiLoginSync","roomId":"r1","seq":0,"data":{"joined":true,"time":6}}"#).2
                == .multiLoginSync(roomId: "r1", MultiLoginSync(joined: true, reason: nil, time: 6)))
    }

    @Test func blockBanAndGap() throws {
        #expect(try event(#"{"event":"block","roomId":"r1","seq":45,"data":{"blocked":true,"durationMs":60000,"operateTime":7,"userIds":["a"],"extra":"x"}}"#).2
                == .block(roomId: "r1", BlockNotice(blocked: true, durationMs: 60000, operateTime: 7, userIds: ["a"], extra: "x")))
        #expect(try event(#"{"event":"ban","roomId":"r1","seq":46,"data":{"banType":3,"durationMs":0,"operateTime":8,"userIds":[],"extra":""}}"#).2
                == .ban(roomId: "r1", BanNotice(banType: 3, durationMs: 0, operateTime: 8, userIds: [], extra: "")))
        #expect(try event(#"{"event":"gap","roomId":"r1","seq":0,"data":{"fromSeq":10,"toSeq":20}}"#).2
                == .gap(roomId: "r1", fromSeq: 10, toSeq: 20))
    }

    @Test func unknownEventsAreIgnoredAndGarbageIsRefused() throws {
        let (room, _, e) = try event(#"{"event":"futureThing","roomId":"r1","seq":0,"data":{}}"#)
        #expect(room == "r1" && e == nil)
        #expect(throws: (any Error).self) { try InboundFrame.decode("[1,2]") }
        #expect(throws: (any Error).self) { try InboundFrame.decode(#"{"data":{}}"#) }
        #expect(throws: (any Error).self) { try InboundFrame.decode(#"{"event":"message","roomId":"r1","seq":1,"data":{"seq":"x"}}"#) }
    }
}
