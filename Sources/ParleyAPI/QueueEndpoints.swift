import ParleyRooms

/// Q1-Q7: the room queue, as the app server. Its elements are never transient (Q3): transience follows a
/// client session, and the app server has none.
enum QueueEndpoints {
    struct Init: Decodable, Sendable {
        var roomId: String
        var maxSize: Int
    }

    struct Offer: Decodable, Sendable {
        var roomId: String
        var key: String
        var value: String
    }

    struct Poll: Decodable, Sendable {
        var roomId: String
        /// Empty or absent = the head.
        var key: String?
    }

    struct RoomOnly: Decodable, Sendable {
        var roomId: String
    }

    struct BatchUpdate: Decodable, Sendable {
        var roomId: String
        var elements: [QueueItemJSON]
        var needNotify: Bool?
        var notifyExt: String?
    }

    struct ListAnswer: Encodable, Sendable { var elements: [QueueItemJSON] }
    struct ElementAnswer: Encodable, Sendable { var element: QueueItemJSON }
    struct NotFoundAnswer: Encodable, Sendable { var notFound: [String] }

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/queue/init", Init.self) { api, b, _ in
            _ = try await api.room(.queueInit(roomId: b.roomId, maxSize: b.maxSize), roomId: b.roomId)
            return Done()
        },
        .post("/v1/queue/offer", Offer.self) { api, b, _ in
            _ = try await api.room(.queueOffer(QueueOffer(roomId: b.roomId, key: b.key, value: b.value)),
                                   roomId: b.roomId)
            return Done()
        },
        .post("/v1/queue/poll", Poll.self) { api, b, _ in
            guard case .queueElement(let e) = try await api.room(.queuePoll(roomId: b.roomId, key: b.key ?? ""),
                                                                  roomId: b.roomId) else {
                throw APIError(.unavailable, "unexpected reply to a poll")
            }
            return ElementAnswer(element: QueueItemJSON(key: e.key, value: e.value))
        },
        .post("/v1/queue/list", RoomOnly.self) { api, b, _ in
            guard case .queue(let entries) = try await api.room(.queueList(roomId: b.roomId), roomId: b.roomId) else {
                throw APIError(.unavailable, "unexpected reply to a queue list")
            }
            return ListAnswer(elements: entries.map { QueueItemJSON(key: $0.key, value: $0.value) })
        },
        .post("/v1/queue/drop", RoomOnly.self) { api, b, _ in
            _ = try await api.room(.queueDrop(roomId: b.roomId), roomId: b.roomId)
            return Done()
        },
        .post("/v1/queue/batchUpdate", BatchUpdate.self) { api, b, _ in
            let command = RoomCommand.queueBatchUpdate(QueueBatchUpdate(
                roomId: b.roomId, elements: b.elements.map { QueueEntry(key: $0.key, value: $0.value) },
                needNotify: b.needNotify ?? true, notifyExt: b.notifyExt ?? ""))
            guard case .keysNotFound(let keys) = try await api.room(command, roomId: b.roomId) else {
                throw APIError(.unavailable, "unexpected reply to a batch update")
            }
            return NotFoundAnswer(notFound: keys)
        },
    ]
}
