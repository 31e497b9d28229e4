import ParleyRooms

/// M2-M9: roles, restrictions, kicks and member reads, as the app server (which may do what the creator may).
enum MemberEndpoints {
    struct SetRole: Decodable, Sendable {
        var roomId: String
        var accid: String
        /// "manager", "common", "blocklist" or "mute".
        var role: String
        /// true sets the role or restriction, false removes it.
        var enable: Bool
        /// Blocklist only: minutes (1 … 43,200), 0 or absent = permanent.
        var minutes: UInt64?
        var needNotify: Bool?
        var notifyExt: String?
    }

    struct TempMute: Decodable, Sendable {
        var roomId: String
        var accid: String
        /// 0 lifts the mute; a repeat replaces the expiry (M2).
        var seconds: UInt64
        var needNotify: Bool?
        var notifyExt: String?
    }

    struct GlobalMuteBody: Decodable, Sendable {
        var accid: String
        var mute: Bool
        /// 0 or absent = permanent; at most 43,200.
        var minutes: UInt64?
        var extra: String?
    }

    struct Kick: Decodable, Sendable {
        var roomId: String
        var accid: String
        var notifyExt: String?
    }

    struct Page: Decodable, Sendable {
        var roomId: String
        /// "regular", "temp", "regularOnline" or "unregularReversed".
        var kind: String
        /// The last member's pageKey from the previous page; 0 or absent = first page.
        var anchor: UInt64?
        var limit: Int
    }

    struct ByIds: Decodable, Sendable {
        var roomId: String
        var accids: [String]
    }

    struct MembersAnswer: Encodable, Sendable { var members: [MemberJSON] }
    struct ShardsAnswer: Encodable, Sendable { var shardsChanged: Int }

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/member/setRole", SetRole.self) { api, b, _ in
            let u = MemberUpdate(roomId: b.roomId, userId: b.accid, enable: b.enable, duration: b.minutes ?? 0,
                                 needNotify: b.needNotify ?? true, notifyExt: b.notifyExt ?? "")
            let command: RoomCommand
            switch b.role {
            case "manager": command = .markManager(u)
            case "common": command = .markCommon(u)
            case "blocklist": command = .setBlocked(u)
            case "mute": command = .setMuted(u)
            default: throw APIError(.badField, "role must be one of blocklist, common, manager, mute")
            }
            guard b.minutes == nil || b.role == "blocklist" else {
                throw APIError(.badField, "minutes applies to the blocklist only")
            }
            _ = try await api.room(command, roomId: b.roomId)
            return try await members(api, b.roomId, [b.accid])
        },
        .post("/v1/member/tempMute", TempMute.self) { api, b, _ in
            _ = try await api.room(.setTempMute(MemberUpdate(
                roomId: b.roomId, userId: b.accid, enable: b.seconds > 0, duration: b.seconds,
                needNotify: b.needNotify ?? true, notifyExt: b.notifyExt ?? "")), roomId: b.roomId)
            return try await members(api, b.roomId, [b.accid])
        },
        // M9: the state machine keeps global mutes per shard, so the change goes to every shard; lifting a
        // mute counts the shards where it was in force.
        // The calling app's user only (A8): the account in the app's namespace.
        .post("/v1/member/globalMute", GlobalMuteBody.self) { api, b, app in
            try FieldRule.id(b.accid, "accid")
            let user = AppScope.scoped(b.accid, in: api.namespace(app))
            let command = RoomCommand.setGlobalMute(GlobalMute(userId: user, enable: b.mute, minutes: b.minutes ?? 0,
                                                               extra: b.extra ?? ""))
            return ShardsAnswer(shardsChanged: try await api.everyShard(command, tolerating: b.mute ? [] : [.alreadyInState]))
        },
        .post("/v1/member/kick", Kick.self) { api, b, _ in
            _ = try await api.room(.kick(MemberUpdate(roomId: b.roomId, userId: b.accid, notifyExt: b.notifyExt ?? "")),
                                   roomId: b.roomId)
            return Done()
        },
        .post("/v1/member/page", Page.self) { api, b, _ in
            let kind = try FieldRule.pick(b.kind, FieldRule.memberKinds, "kind")
            let reply = try await api.room(.fetchMembers(FetchMembers(roomId: b.roomId, kind: kind, anchor: b.anchor ?? 0,
                                                                      limit: b.limit)), roomId: b.roomId)
            return MembersAnswer(members: list(reply))
        },
        .post("/v1/member/byIds", ByIds.self) { api, b, _ in
            try await members(api, b.roomId, b.accids)
        },
    ]

    static func members(_ api: ServerAPI, _ roomId: String, _ ids: [String]) async throws -> MembersAnswer {
        let reply = try await api.room(.fetchMembersByIds(RoomUsers(roomId: roomId, userIds: ids)), roomId: roomId)
        return MembersAnswer(members: list(reply))
    }

    private static func list(_ reply: RoomReply) -> [MemberJSON] {
        guard case .members(let views) = reply else { return [] }
        return views.map(MemberJSON.init)
    }
}
