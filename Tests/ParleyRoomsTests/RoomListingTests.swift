import Testing
@testable import ParleyRooms

/// `listRooms`: how the server API walks a shard's rooms for a broadcast (N1).
@Suite struct RoomListingTests {
    @Test func listRoomsPagesThroughIdsInOrderForTheAppServerOnly() throws {
        var shard = TestShard()
        for id in ["c", "a", "b", "d"] { _ = shard.run(.createRoom(CreateRoom(roomId: id, creator: "o", name: "n"))) }
        _ = shard.run(.closeRoom(roomId: "b", ext: ""))
        guard case .roomIds(let first)? = shard.run(.listRooms(after: "", limit: 3)).reply else {
            Issue.record("no page"); return
        }
        #expect(first == ["a", "b", "c"], "closed rooms are listed too: the caller decides")
        guard case .roomIds(let rest)? = shard.run(.listRooms(after: "c", limit: 3)).reply else {
            Issue.record("no page"); return
        }
        #expect(rest == ["d"])
        guard case .roomIds(let none)? = shard.run(.listRooms(after: "d", limit: 3)).reply else {
            Issue.record("no page"); return
        }
        #expect(none.isEmpty)
        shard.expectRejected(.listRooms(after: "", limit: 0), .badParameter)
        shard.expectRejected(.listRooms(after: "", limit: 1001), .badParameter)
        shard.expectRejected(.listRooms(after: "", limit: 10), as: TestShard.session("o"), .noPermission)
        #expect(RoomCommand.listRooms(after: "", limit: 1).isReadOnly)
        let bytes = RoomCommand.listRooms(after: "x", limit: 7).encoded()
        #expect(try RoomCommand(decoding: bytes) == .listRooms(after: "x", limit: 7))
        let reply = RoomReply.roomIds(["a", "b"])
        #expect(try RoomReply(decoding: reply.encoded()) == reply)
    }
}
