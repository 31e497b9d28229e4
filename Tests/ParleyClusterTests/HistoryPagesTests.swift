import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import ParleyCluster
@testable import ParleyHost
import ParleyRooms
import ParleyStorage

/// Issue 34 (N5, X2): a history read past a room's in-memory window is finished from the store on the
/// store's thread, and its answer comes back on the host's loop — the loop never waits on SQLite for it.
@Suite struct HistoryPagesTests {
    static func message(_ seq: Int) -> HistoryItem {
        .message(ChatMessage(seq: UInt64(seq), serverId: UInt64(seq), time: Int64(seq * 100), senderId: "u",
                             senderNickname: "", senderAvatar: "", senderRoomExt: "", type: .text,
                             clientMessageId: "", body: "b\(seq)", ext: ""))
    }

    @Test("N5: the store's rows and the window's items make the page; the answer comes later, on the loop")
    func aPageFromTheStoreIsAnsweredOnTheLoopAfterFinishReturns() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pages-\(UUID().uuidString).sqlite").path
        let database = try NodeDatabase(path: path, durable: false)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let pages = HistoryPages(database: database)
        pages.loop = loop
        // Rows 1...6 left the window (handed over by `writeWaitingRows`, as the host's waiting rows are);
        // the window holds 7...9.
        let waiting = (1...6).map { RoomHistoryStore.Row(shard: 0, roomId: "r", item: Self.message($0)) }
        let window = (7...9).map(Self.message)
        let fallback = ApplyOutcome(result: .success(.history(window.reversed())), events: [])
        let read = RoomHistoryRead(roomId: "r", query: .olderDescending(after: -1, before: .max, limit: 4),
                                   items: window.reversed(), types: [], limit: 7, belowSeq: 7, notBefore: 0,
                                   fallback: fallback)
        let (seqs, answeredAfterReturn, onLoop) = try await loop.flatSubmit { () -> EventLoopFuture<([UInt64], Bool, Bool)> in
            let promise = loop.makePromise(of: ([UInt64], Bool, Bool).self)
            var returned = false
            pages.finish(read.complete, fallback: read.fallback, writeWaitingRows: {
                var batch = StorageBatch()
                batch.history = waiting
                try database.commit(batch)
            }) { outcome in
                guard case .success(.history(let items)) = outcome.result else {
                    return promise.fail(LocalError.unexpected("\(outcome)"))
                }
                promise.succeed((items.map(\.seq), returned, loop.inEventLoop))
            }
            returned = true
            return promise.futureResult
        }.get()
        #expect(seqs == [9, 8, 7, 6, 5, 4, 3])
        #expect(answeredAfterReturn, "answered inside finish: the store was read on the loop")
        #expect(onLoop)
    }

    @Test("X2: a resume past the window reads the store; a store without the next item leaves the answer as it was")
    func aResumeIsServedFromTheStoreOnlyWhenItHoldsTheNextItem() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pages-\(UUID().uuidString).sqlite").path
        let database = try NodeDatabase(path: path, durable: false)
        var batch = StorageBatch()
        batch.history = (3...8).map { RoomHistoryStore.Row(shard: 0, roomId: "r", item: Self.message($0)) }
        try database.commit(batch)
        try database.history.waitForWrites()
        let gone = ApplyOutcome(result: .failure(RoomError(.historyGone, "gone")), events: [])
        func resume(after seq: UInt64) throws -> ApplyOutcome {
            let read = RoomHistoryRead(roomId: "r", query: .since(afterSeq: seq, notBefore: 0, limit: 100), items: [],
                                       types: [], limit: 100, belowSeq: .max, notBefore: 0, fallback: gone)
            return try database.history.readNow { try read.complete($0) }
        }
        guard case .success(.history(let items)) = try resume(after: 4).result else { Issue.record("no page"); return }
        #expect(items.map(\.seq) == [5, 6, 7, 8])
        #expect(try resume(after: 1) == gone, "item 2 is not in the store: the gap is reported, not skipped")
    }

    enum LocalError: Error { case unexpected(String) }
}
