import Testing
@testable import ParleyRooms
import ParleyWire

/// SPEC D3 in the replicated state: a message keeps the priority it was sent with, in its event, its history
/// item and a snapshot; a normal one keeps every first encoding (what nodes before peer protocol 13 read), and
/// another priority has encodings of its own that refuse a normal one written out.
@Suite struct MessagePriorityTests {
    @Test("D3: a message's priority is in its event, its history item and a snapshot")
    func thePriorityIsKept() throws {
        var shard = TestShard.populated()
        for priority in MessagePriority.allCases {
            let sent = shard.user("dave", .sendMessage(SendMessage(roomId: "r1", body: priority.name, priority: priority)))
            guard case .message(let m)? = sent.events.first?.kind else { Issue.record("no message: \(sent)"); continue }
            #expect(m.priority == priority)
        }
        let restored = try RoomsState(restoring: shard.state.snapshot())
        #expect(restored.snapshot() == shard.state.snapshot())
        let page = shard.user("dave", .fetchHistory(HistoryQuery(roomId: "r1", startTime: 0, limit: 10, ascending: true, types: [])))
        guard case .history(let items)? = page.reply else { Issue.record("no history: \(page)"); return }
        let kept = items.compactMap { item -> (String, MessagePriority)? in
            if case .message(let m) = item { return (m.body, m.priority) } else { return nil }
        }
        #expect(kept.map(\.1) == MessagePriority.allCases && kept.map(\.0) == MessagePriority.allCases.map(\.name))
    }

    @Test("D3 upgrade: a normal message keeps its first encodings (command 11, item 0, event 1, activity 1); the others round-trip")
    func encodings() throws {
        let normal = SendMessage(roomId: "r", body: "b")
        #expect(RoomCommand.sendMessage(normal).encoded().first == 11)
        let message = ChatMessage(seq: 3, serverId: 9, time: 1, senderId: "u", senderNickname: "n", senderAvatar: "",
                                  senderRoomExt: "", type: .text, clientMessageId: "c", body: "b", ext: "")
        #expect(HistoryItem.message(message).encoded().first == 0)
        #expect(RoomEventKind.message(message).encoded().first == 1)
        #expect(RoomActivity.message(roomId: "r", message).encoded().first == 1)
        for priority in [MessagePriority.high, .low] {
            var send = normal
            send.priority = priority
            let command = RoomCommand.sendMessage(send)
            #expect(command.encoded().first == 40)
            #expect(try RoomCommand(decoding: command.encoded()) == command)
            let m = message.with(priority: priority)
            #expect(try HistoryItem(decoding: HistoryItem.message(m).encoded()) == .message(m))
            #expect(try RoomEventKind(decoding: RoomEventKind.message(m).encoded()) == .message(m))
            #expect(try RoomActivity(decoding: RoomActivity.message(roomId: "r", m).encoded()) == .message(roomId: "r", m))
            #expect(try HistoryItem(decoding: HistoryItem.message(m).encoded()) != .message(message))
        }
        // A later tag naming normal (or an unknown priority) is refused rather than read as something else.
        var w = ByteWriter()
        w.write(UInt8(40)); w.write(normal); w.write(MessagePriority.normal.rawValue)
        #expect(throws: CodecError.self) { try RoomCommand(decoding: w.bytes) }
        var item = ByteWriter()
        item.write(UInt8(2)); item.write(message); item.write(UInt8(7))
        #expect(throws: CodecError.self) { try HistoryItem(decoding: item.bytes) }
    }
}
