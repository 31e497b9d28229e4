import Foundation
import ParleyEdge
import ParleyRooms
import Testing

/// The hand-written encoder against a real JSON parser: escapes, nesting, every ext variant.
@Suite("Edge frame encoding")
struct EventFrameTests {
    @Test("N1: a message with quotes, backslashes, control characters and non-ASCII text round-trips")
    func escapes() throws {
        let body = "say \"hi\" \\ back\n\ttab \u{01}\u{1F} é 😀 \u{2028}"
        let m = ChatMessage(seq: 7, serverId: 99, time: 1_700_000_000_000, senderId: "a\"b", senderNickname: "Ä",
                            senderAvatar: "", senderRoomExt: "{\"k\":1}", type: .custom, clientMessageId: "c",
                            body: body, ext: "")
        let text = EventFrame.encode(RoomEvent(roomId: "r/1", seq: 7, audience: .room, kind: .message(m)))
        let v = try #require(JSONValue.parse(text))
        #expect(v["event"] == .string("message"))
        #expect(v["roomId"] == .string("r/1"))
        #expect(v["data"]?["body"] == .string(body))
        #expect(v["data"]?["from"] == .string("a\"b"))
        #expect(v["data"]?["fromExt"] == .string("{\"k\":1}"))
        #expect(v["data"]?["type"] == .string("custom"))
        #expect(v["data"]?["serverId"] == .int(99))
    }

    @Test("N3: notification ext variants — none, muteDuration, queue change, queue batch")
    func notificationExts() throws {
        let source = NotificationMember(userId: "u", nickname: "U")
        let exts: [(NotificationExt, (JSONValue?) -> Bool)] = [
            (.none, { $0 == .null }),
            (.muteDuration(seconds: 60), { $0?["muteDuration"] == .int(60) }),
            (.queueChange(.poll, key: "k", value: "v"), { $0?["change"] == .string("poll") && $0?["value"] == .string("v") }),
            (.queueBatch(.batchUpdate, [QueueEntry(key: "a", value: "1"), QueueEntry(key: "b", value: "2")]), {
                $0?["change"] == .string("batchUpdate") && $0?["elements"]?.array?.count == 2
                    && $0?["elements"]?.array?.last?["key"] == .string("b")
            }),
        ]
        for (ext, check) in exts {
            let n = RoomNotification(type: .queueChange, seq: 3, time: 5, source: source,
                                     targets: [source, NotificationMember(userId: "t", nickname: "T")], ext: ext)
            let v = try #require(JSONValue.parse(EventFrame.encode(RoomEvent(roomId: "r", seq: 3, audience: .room,
                                                                              kind: .notification(n)))))
            #expect(check(v["data"]?["ext"]), "\(ext)")
            #expect(v["data"]?["targets"]?.array?.count == 2)
            #expect(v["data"]?["type"] == .int(317))
            let item = try #require(JSONValue.parse(EventFrame.encode(.notification(n), roomId: "r")))
            #expect(item["data"]?["seq"] == .int(3))
        }
    }

    @Test("X2: gap event and error answers")
    func gapAndErrors() throws {
        let gap = try #require(JSONValue.parse(EventFrame.gap(roomId: "r", from: 4, to: 9)))
        #expect(gap["event"] == .string("gap") && gap["seq"] == .int(0))
        #expect(gap["data"]?["fromSeq"] == .int(4) && gap["data"]?["toSeq"] == .int(9))
        let error = try #require(JSONValue.parse(EventFrame.error(id: 3, .wrongType("body", "string"))))
        #expect(error["ok"] == .bool(false) && error["error"]?["code"] == .int(414))
        #expect(ProtocolError.from(EdgeClusterError.timedOut).code == 5040)
        #expect(ProtocolError.from(EdgeClusterError.unavailable("x")).code == 5030)
        #expect(ProtocolError.from(RoomError(.historyGone, "gone")).code == 13112)
    }
}
