import ParleyRooms
import ParleyPlacement

/// R1-R6, N4, E6, E7: rooms and their policies (rooms are created and closed only here, R2).
enum RoomEndpoints {
    struct Create: Decodable, Sendable {
        /// Generated when absent.
        var roomId: String?
        var creator: String
        var name: String
        var announcement: String?
        var broadcastUrl: String?
        var ext: String?
        /// "anyone" (default) or "managers".
        var queueLevel: String?
    }

    struct RoomId: Decodable, Sendable {
        var roomId: String
    }

    struct RoomIds: Decodable, Sendable {
        var roomIds: [String]
    }

    struct Update: Decodable, Sendable {
        var roomId: String
        var name: String?
        var announcement: String?
        var broadcastUrl: String?
        var ext: String?
        var queueLevel: String?
        var needNotify: Bool?
        var notifyExt: String?
    }

    struct ToggleClose: Decodable, Sendable {
        var roomId: String
        /// false closes the room (everyone is kicked with reason 1, 311 is sent); true reopens it.
        var valid: Bool
        var ext: String?
    }

    struct RoomPolicy: Decodable, Sendable {
        var roomId: String
        /// N4: absent or null = follow the app policy.
        var enterExitNotifications: Bool?
        /// E7: "single" or "multi"; absent = follow the app policy.
        var devicePolicy: String?
    }

    struct AppPolicyBody: Decodable, Sendable {
        var devicePolicy: String?
        var oneRoomPerUser: Bool?
        var enterExitNotifications: Bool?
        var storeEnterExitInHistory: Bool?
        var memberChangeEvents: Bool?
    }

    struct BudgetBody: Decodable, Sendable {
        var userMessagesPerSecond: Int?
        var userBurst: Int?
        var roomMessagesPerSecond: Int?
        var roomBurst: Int?
        var connectionRequestsPerSecond: Int?
        var connectionBurst: Int?
        /// D3: the most messages a second one edge delivers to one room of the app; absent: no ceiling.
        var roomDeliveredPerSecond: Int?
    }

    struct RoomMute: Decodable, Sendable {
        var roomId: String
        var mute: Bool
        var needNotify: Bool?
        var notifyExt: String?
    }

    struct Allowlist: Decodable, Sendable {
        var roomId: String
        /// true adds the accids, false removes them.
        var add: Bool
        var accids: [String]
        var needNotify: Bool?
        var notifyExt: String?
    }

    struct RequestAddr: Decodable, Sendable {
        var roomId: String
        var accid: String
        var clientType: String?
        var clientIp: String?
    }

    struct RoomAnswer: Encodable, Sendable { var room: RoomJSON }
    struct RoomsAnswer: Encodable, Sendable { var rooms: [RoomJSON]; var missing: [String] }
    struct AddrAnswer: Encodable, Sendable { var addr: [String] }
    struct ShardsAnswer: Encodable, Sendable { var shards: Int }

    static let maxBatch = 20

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/room/create", Create.self) { api, b, app in
            if let given = b.roomId { try FieldRule.newRoomId(AppScope.local(given)) }
            let roomId = b.roomId ?? AppScope.scoped(String(UInt64.random(in: 1_000_000_000 ... UInt64(Int64.max))),
                                                     in: api.namespace(app))
            let level = try FieldRule.pick(optional: b.queueLevel, FieldRule.queueLevels, "queueLevel")
            _ = try await api.room(.createRoom(CreateRoom(
                roomId: roomId, creator: b.creator, name: b.name, announcement: b.announcement ?? "", ext: b.ext ?? "",
                broadcastUrl: b.broadcastUrl ?? "", queueModificationLevel: level ?? .anyone)), roomId: roomId)
            return RoomAnswer(room: try await info(api, roomId))
        },
        .post("/v1/room/get", RoomId.self) { api, b, _ in
            RoomAnswer(room: try await info(api, b.roomId))
        },
        // M5-style batch read with online counts; unknown ids are listed, not an error.
        .post("/v1/room/getBatch", RoomIds.self) { api, b, _ in
            try FieldRule.count(b.roomIds, 1...maxBatch, "roomIds")
            for id in b.roomIds { try FieldRule.roomId(id) }
            var rooms: [RoomJSON] = []
            var missing: [String] = []
            for id in b.roomIds {
                do {
                    rooms.append(try await info(api, id))
                } catch let e as APIError where e.code == RoomErrorCode.roomNotFound.rawValue {
                    missing.append(AppScope.local(id))
                }
            }
            return RoomsAnswer(rooms: rooms, missing: missing)
        },
        .post("/v1/room/update", Update.self) { api, b, _ in
            let level = try FieldRule.pick(optional: b.queueLevel, FieldRule.queueLevels, "queueLevel")
            _ = try await api.room(.updateRoom(UpdateRoom(
                roomId: b.roomId, name: b.name, announcement: b.announcement, broadcastUrl: b.broadcastUrl, ext: b.ext,
                queueModificationLevel: level, needNotify: b.needNotify ?? false, notifyExt: b.notifyExt ?? "")),
                roomId: b.roomId)
            return RoomAnswer(room: try await info(api, b.roomId))
        },
        .post("/v1/room/toggleClose", ToggleClose.self) { api, b, _ in
            let command: RoomCommand = b.valid ? .reopenRoom(roomId: b.roomId) : .closeRoom(roomId: b.roomId, ext: b.ext ?? "")
            _ = try await api.room(command, roomId: b.roomId)
            return RoomAnswer(room: try await info(api, b.roomId))
        },
        .post("/v1/room/setPolicy", RoomPolicy.self) { api, b, _ in
            let device = try FieldRule.pick(optional: b.devicePolicy, FieldRule.devicePolicies, "devicePolicy")
            _ = try await api.room(.setRoomPolicy(RoomPolicyUpdate(
                roomId: b.roomId, enterExitNotifications: b.enterExitNotifications, devicePolicy: device)), roomId: b.roomId)
            return RoomAnswer(room: try await info(api, b.roomId))
        },
        // The app policy lives in every shard's state: it is applied to each shard in turn, for the calling
        // app's rooms only (A8).
        .post("/v1/app/setPolicy", AppPolicyBody.self) { api, b, app in
            var p = AppPolicy()
            if let d = b.devicePolicy { p.devicePolicy = try FieldRule.pick(d, FieldRule.devicePolicies, "devicePolicy") }
            if let v = b.oneRoomPerUser { p.oneRoomPerUser = v }
            if let v = b.enterExitNotifications { p.enterExitNotifications = v }
            if let v = b.storeEnterExitInHistory { p.storeEnterExitInHistory = v }
            if let v = b.memberChangeEvents { p.memberChangeEvents = v }
            return ShardsAnswer(shards: try await api.everyShard(.setScopedAppPolicy(namespace: api.namespace(app), p)))
        },
        // A1: the app's message budgets, kept in every shard like the policy; fields left out keep their
        // defaults (SendBudget), not the values set before.
        .post("/v1/app/setBudgets", BudgetBody.self) { api, b, app in
            var budget = SendBudget()
            if let v = b.userMessagesPerSecond { budget.userMessagesPerSecond = v }
            if let v = b.userBurst { budget.userBurst = v }
            if let v = b.roomMessagesPerSecond { budget.roomMessagesPerSecond = v }
            if let v = b.roomBurst { budget.roomBurst = v }
            var connection: ConnectionBudget?
            if b.connectionRequestsPerSecond != nil || b.connectionBurst != nil {
                let standard = ConnectionBudget.standard
                connection = ConnectionBudget(requestsPerSecond: b.connectionRequestsPerSecond ?? standard.requestsPerSecond,
                                              burst: b.connectionBurst ?? standard.burst)
            }
            guard budget.isValid, connection?.isValid ?? true,
                  b.roomDeliveredPerSecond.map(MetaState.roomCeilingRange.contains) ?? true else {
                throw APIError(.badField, "rates must be 1 … 1000000 a second and each burst at least its rate")
            }
            try await api.setConnectionBudget(connection, app: app)
            try await api.setRoomCeiling(b.roomDeliveredPerSecond, app: app)
            return ShardsAnswer(shards: try await api.everyShard(.setSendBudget(namespace: api.namespace(app), budget)))
        },
        .post("/v1/room/mute", RoomMute.self) { api, b, _ in
            _ = try await api.room(.setRoomMute(RoomSwitch(roomId: b.roomId, enable: b.mute, needNotify: b.needNotify ?? true,
                                                           notifyExt: b.notifyExt ?? "")), roomId: b.roomId)
            return RoomAnswer(room: try await info(api, b.roomId))
        },
        .post("/v1/room/allowlist", Allowlist.self) { api, b, _ in
            _ = try await api.room(.updateAllowlist(RoomSwitch(roomId: b.roomId, enable: b.add, userIds: b.accids,
                                                               needNotify: b.needNotify ?? true, notifyExt: b.notifyExt ?? "")),
                                   roomId: b.roomId)
            return Done()
        },
        // E6: the room must exist and be open; the answer lists edges best first.
        .post("/v1/room/requestAddr", RequestAddr.self) { api, b, _ in
            try FieldRule.id(b.accid, "accid")
            guard (b.clientType ?? "").utf8.count <= 32, (b.clientIp ?? "").utf8.count <= 64 else {
                throw APIError(.badField, "clientType ≤ 32 bytes, clientIp ≤ 64 bytes")
            }
            guard try await info(api, b.roomId).valid else {
                throw APIError(RoomError(.roomClosed, "the room is closed"))
            }
            return AddrAnswer(addr: await api.backend.roomAddresses(roomId: b.roomId))
        },
    ]

    static func info(_ api: ServerAPI, _ roomId: String) async throws -> RoomJSON {
        guard case .roomInfo(let view) = try await api.room(.fetchRoomInfo(roomId: roomId), roomId: roomId) else {
            throw APIError(.unavailable, "unexpected reply to a room info read")
        }
        return RoomJSON(view)
    }
}
