import Testing
@testable import ParleyRooms

@Suite struct QueueRulesTests {
    private func list(_ shard: inout TestShard) -> [QueueEntry] {
        if case .queue(let q) = shard.run(.queueList(roomId: "r1")).reply { return q }
        return []
    }

    @Test("Q1 the queue is ordered key/value; fetch returns every element in order")
    func q1Ordered() {
        var shard = TestShard.populated()
        for k in ["c", "a", "b"] { shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: k, value: k + "!"))) }
        #expect(list(&shard).map(\.key) == ["c", "a", "b"])
        #expect(shard.user("dave", .queueList(roomId: "r1")).reply == .queue(list(&shard)))
    }

    @Test("Q2 offer: key ≤ 32 bytes, value ≤ 4096; existing key updated in place, new key at the tail; last writer owns it")
    func q2Offer() {
        var shard = TestShard.populated()
        shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "a", value: "1", transient: true)))
        shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "b", value: "2")))
        let update = shard.user("erin", .queueOffer(QueueOffer(roomId: "r1", key: "a", value: "3", transient: true)))
        #expect(update.notifications.first?.ext == .queueChange(.update, key: "a", value: "3"))
        #expect(list(&shard) == [QueueEntry(key: "a", value: "3"), QueueEntry(key: "b", value: "2")])
        #expect(shard.state.rooms["r1"]!.queue["a"]?.owner == "erin")
        shard.expectRejected(.queueOffer(QueueOffer(roomId: "r1", key: .bytes(33), value: "v")),
                             as: TestShard.session("dave"), .badParameter)
        shard.expectRejected(.queueOffer(QueueOffer(roomId: "r1", key: "k", value: .bytes(4097))),
                             as: TestShard.session("dave"), .badParameter)
        #expect(shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: .bytes(32), value: .bytes(4096)))).isSuccess)
        // Dave left; "a" now belongs to erin and stays.
        shard.user("dave", .exit(roomId: "r1"))
        #expect(list(&shard).map(\.key).contains("a"))
    }

    @Test("Q3 transient elements go when their owner disconnects or leaves: one 320 PartClear with the removed items")
    func q3Transient() throws {
        var shard = TestShard.populated()
        shard.enter("dave", device: 2, edge: "edge-2")
        shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "a", value: "1", transient: true)))
        shard.user("erin", .queueOffer(QueueOffer(roomId: "r1", key: "b", value: "2", transient: true)))
        shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "c", value: "3", transient: true)))
        shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "d", value: "4")))
        let firstDevice = shard.user("dave", .exit(roomId: "r1"))
        #expect(!firstDevice.notificationTypes.contains(.queueBatchChange), "dave is still online on edge-2")
        let lost = shard.run(.sessionLost(edgeId: "edge-2"))
        #expect(lost.reply == .sessionsEnded(1))
        let clear = try #require(lost.notifications.first { $0.type == .queueBatchChange })
        #expect(clear.ext == .queueBatch(.partClear, [QueueEntry(key: "a", value: "1"), QueueEntry(key: "c", value: "3")]))
        #expect(list(&shard).map(\.key) == ["b", "d"])
        shard.user("carol", .queueOffer(QueueOffer(roomId: "r1", key: "e", value: "5", transient: true)))
        // A lost edge takes erin and carol (and others) offline: one PartClear for the room, in queue order.
        let edgeLost = shard.run(.sessionLost(edgeId: "edge-1"))
        let clears = edgeLost.notifications.filter { $0.type == .queueBatchChange }
        #expect(clears.count == 1)
        #expect(clears.first?.ext == .queueBatch(.partClear, [QueueEntry(key: "b", value: "2"), QueueEntry(key: "e", value: "5")]))
        #expect(clears.first?.source.userId == "")
        #expect(list(&shard).map(\.key) == ["d"])
    }

    @Test("Q4 batch update: ≤ 100 elements, keys ≤ 128 bytes, notifyExt ≤ 2048; returns keys not found")
    func q4Batch() {
        var shard = TestShard.populated()
        shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "a", value: "1")))
        shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "b", value: "2")))
        let out = shard.user("erin", .queueBatchUpdate(QueueBatchUpdate(
            roomId: "r1", elements: [QueueEntry(key: "b", value: "B"), QueueEntry(key: "zz", value: "Z")],
            notifyExt: "n")))
        #expect(out.reply == .keysNotFound(["zz"]))
        #expect(out.notifications.first?.ext == .queueBatch(.batchUpdate, [QueueEntry(key: "b", value: "B")]))
        #expect(out.notifications.first?.notifyExt == "n")
        #expect(list(&shard) == [QueueEntry(key: "a", value: "1"), QueueEntry(key: "b", value: "B")])
        let hundred = (0 ..< 100).map { QueueEntry(key: .bytes(128) + "", value: "\($0)") }
        #expect(shard.user("erin", .queueBatchUpdate(QueueBatchUpdate(roomId: "r1", elements: hundred))).isSuccess)
        shard.expectRejected(.queueBatchUpdate(QueueBatchUpdate(roomId: "r1", elements: hundred + [hundred[0]])),
                             as: TestShard.session("erin"), .badParameter)
        shard.expectRejected(.queueBatchUpdate(QueueBatchUpdate(roomId: "r1", elements: [QueueEntry(key: .bytes(129), value: "")])),
                             as: TestShard.session("erin"), .badParameter)
        shard.expectRejected(.queueBatchUpdate(QueueBatchUpdate(roomId: "r1", elements: [QueueEntry(key: "a", value: "")],
                                                                notifyExt: .bytes(2049))),
                             as: TestShard.session("erin"), .badParameter)
        let quiet = shard.user("erin", .queueBatchUpdate(QueueBatchUpdate(
            roomId: "r1", elements: [QueueEntry(key: "a", value: "x")], needNotify: false)))
        #expect(quiet.isSuccess && quiet.events.isEmpty)
    }

    @Test("Q5 poll removes by key, or the head for an empty key, and returns the element")
    func q5Poll() {
        var shard = TestShard.populated()
        for k in ["a", "b", "c"] { shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: k, value: k))) }
        #expect(shard.user("dave", .queuePoll(roomId: "r1", key: "")).reply == .queueElement(QueueEntry(key: "a", value: "a")))
        let byKey = shard.user("dave", .queuePoll(roomId: "r1", key: "c"))
        #expect(byKey.reply == .queueElement(QueueEntry(key: "c", value: "c")))
        #expect(byKey.notifications.first?.ext == .queueChange(.poll, key: "c", value: "c"))
        #expect(list(&shard).map(\.key) == ["b"])
        shard.expectRejected(.queuePoll(roomId: "r1", key: "zz"), as: TestShard.session("dave"), .queueElementNotFound)
        shard.user("dave", .queuePoll(roomId: "r1", key: ""))
        shard.expectRejected(.queuePoll(roomId: "r1", key: ""), as: TestShard.session("dave"), .queueElementNotFound)
    }

    @Test("Q6 drop clears the queue")
    func q6Drop() {
        var shard = TestShard.populated()
        for k in ["a", "b"] { shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: k, value: k))) }
        let drop = shard.user("dave", .queueDrop(roomId: "r1"))
        #expect(drop.notifications.first?.ext == .queueChange(.drop, key: "", value: ""))
        #expect(list(&shard).isEmpty)
    }

    @Test("Q7 permission by queueModificationLevel; 317 carries Offer, Poll, Drop, Update with key and value")
    func q7Permission() {
        var shard = TestShard.populated()
        shard.user("owner", .updateRoom(UpdateRoom(roomId: "r1", queueModificationLevel: .managers)))
        shard.expectRejected(.queueOffer(QueueOffer(roomId: "r1", key: "k", value: "v")), as: TestShard.session("carol"),
                             .noPermission)
        shard.expectRejected(.queueDrop(roomId: "r1"), as: TestShard.session("dave"), .noPermission)
        let offer = shard.user("boss", .queueOffer(QueueOffer(roomId: "r1", key: "k", value: "v")))
        #expect(offer.notificationTypes == [.queueChange])
        shard.expectRejected(.queuePoll(roomId: "r1", key: "k"), as: TestShard.session("dave"), .noPermission)
        #expect(shard.user("dave", .queueList(roomId: "r1")).isSuccess, "anyone entered may read the queue")
        #expect(shard.run(.queueOffer(QueueOffer(roomId: "r1", key: "s", value: "v"))).isSuccess)
        #expect(QueueChangeType.offer.rawValue == 1 && QueueChangeType.poll.rawValue == 2)
        #expect(QueueChangeType.drop.rawValue == 3 && QueueChangeType.update.rawValue == 4)
    }
}
