import Foundation

/// The seed's chat room manager calls, one per protocol op (docs/sdk.md has the table). Each needs the room
/// entered and its connection up; while the room is re-entering they fail with 415.
extension ChatroomClient {
    private struct Elements: Decodable { var elements: [QueueElement] }
    private struct OneElement: Decodable { var element: QueueElement }
    private struct Members: Decodable { var members: [Member] }
    private struct Messages: Decodable { var messages: [HistoryItem] }
    private struct RoomAnswer: Decodable { var room: Room }
    private struct AuthAnswer: Decodable { var authMode: AuthMode }
    private struct NotFound: Decodable { var notFound: [String] }

    /// The session's auth mode (E5; the seed's chatroomAuthMode).
    public func authMode(_ roomId: String) async throws -> AuthMode {
        try await call(.authMode(roomId: roomId), roomId: roomId, answer: AuthAnswer.self).authMode
    }

    // MARK: Messages

    /// N1. Anonymous users get 13102; `type` can never be `.notification` (N2, 414).
    @discardableResult
    /// `priority` (D3): "high", "normal" (nil) or "low" — what edges may shed above the room's ceiling.
    public func sendMessage(_ roomId: String, type: MessageType = .text, body: String, ext: String? = nil,
                            clientMessageId: String? = nil, priority: String? = nil) async throws -> SendReceipt {
        try await call(.sendMessage(roomId: roomId, type: type, body: body, ext: ext, clientMessageId: clientMessageId,
                                    priority: priority),
                       roomId: roomId, answer: SendReceipt.self)
    }

    /// N5: messages and notifications, newest first unless `query.order` is `.asc`.
    public func fetchMessageHistory(_ roomId: String, query: HistoryQuery = HistoryQuery()) async throws -> [HistoryItem] {
        try await call(.fetchHistory(roomId: roomId, query: query), roomId: roomId, answer: Messages.self).messages
    }

    // MARK: Room

    /// R3: only from inside the room.
    public func fetchChatroomInfo(_ roomId: String) async throws -> Room {
        try await call(.fetchRoomInfo(roomId: roomId), roomId: roomId, answer: RoomAnswer.self).room
    }

    /// R4: creator and managers; `needNotify` sends 312 with `notifyExt`.
    public func updateChatroomInfo(_ roomId: String, _ update: RoomInfoUpdate, needNotify: Bool? = nil, notifyExt: String? = nil) async throws {
        _ = try await call(.updateRoomInfo(roomId: roomId, update: update, needNotify: needNotify, notifyExt: notifyExt), roomId: roomId)
    }

    /// R5: room-wide mute (318) and unmute (319).
    public func setRoomMute(_ roomId: String, enable: Bool, needNotify: Bool? = nil, notifyExt: String? = nil) async throws {
        _ = try await call(.setRoomMute(roomId: roomId, enable: enable, needNotify: needNotify, notifyExt: notifyExt), roomId: roomId)
    }

    /// R6: users who may speak during a room-wide mute.
    public func updateAllowlist(_ roomId: String, enable: Bool, userIds: [String]) async throws {
        _ = try await call(.updateAllowlist(roomId: roomId, enable: enable, userIds: userIds), roomId: roomId)
    }

    // MARK: Members

    /// M4: one page; pass the last member's `pageKey` as `anchor` for the next (nil or 0 = first page).
    public func fetchChatroomMembers(_ roomId: String, type: MemberQueryType, anchor: Int64? = nil, limit: Int) async throws -> [Member] {
        try await call(.fetchMembers(roomId: roomId, type: type, anchor: anchor, limit: limit), roomId: roomId, answer: Members.self).members
    }

    /// M5: at most 20 ids.
    public func fetchChatroomMembersByIds(_ roomId: String, userIds: [String]) async throws -> [Member] {
        try await call(.fetchMembersByIds(roomId: roomId, userIds: userIds), roomId: roomId, answer: Members.self).members
    }

    /// M6: 316 when `needNotify`.
    public func updateMyChatroomMemberInfo(_ roomId: String, _ update: MemberInfoUpdate, needNotify: Bool? = nil, notifyExt: String? = nil) async throws {
        _ = try await call(.updateMyMemberInfo(roomId: roomId, update: update, needNotify: needNotify, notifyExt: notifyExt), roomId: roomId)
    }

    /// M2: only the creator (307 / 308).
    public func markMemberManager(_ roomId: String, userId: String, enable: Bool, notifyExt: String? = nil) async throws {
        _ = try await call(.roleSwitch(.markManager, roomId: roomId, userId: userId, enable: enable, notifyExt: notifyExt), roomId: roomId)
    }

    /// M2: ordinary (common) member on or off (309 / 310).
    public func markNormalMember(_ roomId: String, userId: String, enable: Bool, notifyExt: String? = nil) async throws {
        _ = try await call(.roleSwitch(.markNormal, roomId: roomId, userId: userId, enable: enable, notifyExt: notifyExt), roomId: roomId)
    }

    /// M2: blocklist on or off (303 / 304); a blocklisted user is kicked with reason 5.
    public func updateMemberBlack(_ roomId: String, userId: String, enable: Bool, notifyExt: String? = nil) async throws {
        _ = try await call(.roleSwitch(.setBlacklist, roomId: roomId, userId: userId, enable: enable, notifyExt: notifyExt), roomId: roomId)
    }

    /// M2: permanent mute on or off (305 / 306).
    public func updateMemberMute(_ roomId: String, userId: String, enable: Bool, notifyExt: String? = nil) async throws {
        _ = try await call(.roleSwitch(.setMute, roomId: roomId, userId: userId, enable: enable, notifyExt: notifyExt), roomId: roomId)
    }

    /// M8: temporary mute for `duration` seconds, 0 lifts it (314 / 315).
    public func updateMemberTempMute(_ roomId: String, userId: String, duration: Int64, needNotify: Bool? = nil, notifyExt: String? = nil) async throws {
        _ = try await call(.setTempMute(roomId: roomId, userId: userId, duration: duration, needNotify: needNotify, notifyExt: notifyExt), roomId: roomId)
    }

    /// M7: the target gets `kicked` with reason 2 and `notifyExt`; the room gets 313.
    public func kickMember(_ roomId: String, userId: String, notifyExt: String? = nil) async throws {
        _ = try await call(.kick(roomId: roomId, userId: userId, notifyExt: notifyExt), roomId: roomId)
    }

    // MARK: Queue

    /// Q1: every element, in queue order.
    public func fetchChatroomQueue(_ roomId: String) async throws -> [QueueElement] {
        try await call(.queueList(roomId: roomId), roomId: roomId, answer: Elements.self).elements
    }

    /// Q2, Q3: offer or update; a transient element goes when its owner leaves.
    public func updateChatroomQueueObject(_ roomId: String, _ element: QueueElement, transient: Bool? = nil) async throws {
        _ = try await call(.queueOffer(roomId: roomId, element: element, transient: transient), roomId: roomId)
    }

    /// Q4: updates existing keys only; returns the keys that were not found.
    public func batchUpdateChatroomQueueObject(_ roomId: String, _ elements: [QueueElement], needNotify: Bool? = nil, notifyExt: String? = nil) async throws -> [String] {
        try await call(.queueBatchUpdate(roomId: roomId, elements: elements, needNotify: needNotify, notifyExt: notifyExt),
                       roomId: roomId, answer: NotFound.self).notFound
    }

    /// Q5: removes `key`, or the head when `key` is nil; returns the removed element.
    public func removeChatroomQueueObject(_ roomId: String, key: String? = nil) async throws -> QueueElement {
        try await call(.queuePoll(roomId: roomId, key: key), roomId: roomId, answer: OneElement.self).element
    }

    /// Q6.
    public func dropChatroomQueue(_ roomId: String) async throws {
        _ = try await call(.queueDrop(roomId: roomId), roomId: roomId)
    }
}
