/// SPEC D1: what a message, a notification or an event costs in memory, estimated from its strings (their
/// UTF-8 bytes, O(1) for native strings, plus a string's own 16 bytes) and a fixed part for the rest. Used to
/// bound by bytes what a node keeps of them; pure and deterministic, so replicated state may use it too.
public enum MemoryFootprint {
    /// A string field: its bytes and its 16-byte representation.
    @inlinable public static func of(_ s: String) -> Int { s.utf8.count + 16 }

    @inlinable public static func of(_ list: [String]) -> Int { list.reduce(32) { $0 + of($1) } }
}

extension ChatMessage {
    /// Estimated bytes held for this message.
    public var estimatedBytes: Int {
        64 + MemoryFootprint.of(senderId) + MemoryFootprint.of(senderNickname) + MemoryFootprint.of(senderAvatar)
            + MemoryFootprint.of(senderRoomExt) + MemoryFootprint.of(clientMessageId) + MemoryFootprint.of(body)
            + MemoryFootprint.of(ext)
    }
}

extension RoomNotification {
    /// Estimated bytes held for this notification.
    public var estimatedBytes: Int {
        var bytes = 80 + MemoryFootprint.of(source.userId) + MemoryFootprint.of(source.nickname)
            + MemoryFootprint.of(sourceRoomExt) + MemoryFootprint.of(notifyExt)
        for t in targets { bytes += 16 + MemoryFootprint.of(t.userId) + MemoryFootprint.of(t.nickname) }
        switch ext {
        case .none, .muteDuration: break
        case .queueChange(_, let key, let value): bytes += MemoryFootprint.of(key) + MemoryFootprint.of(value)
        case .queueBatch(_, let entries):
            for e in entries { bytes += MemoryFootprint.of(e.key) + MemoryFootprint.of(e.value) }
        }
        return bytes
    }
}

extension HistoryItem {
    /// Estimated bytes held for this history item.
    public var estimatedBytes: Int {
        switch self {
        case .message(let m): m.estimatedBytes
        case .notification(let n): n.estimatedBytes
        }
    }
}

extension RoomEvent {
    /// Estimated bytes held for this event.
    public var estimatedBytes: Int {
        var bytes = 48 + MemoryFootprint.of(roomId)
        switch audience {
        case .room: break
        case .users(let ids), .sessions(let ids): bytes += MemoryFootprint.of(ids)
        }
        switch kind {
        case .notification(let n): bytes += n.estimatedBytes
        case .message(let m): bytes += m.estimatedBytes
        case .kicked(_, let ext): bytes += MemoryFootprint.of(ext)
        case .status, .multiLoginSync: break
        case .memberChange(let actions, _): bytes += actions.count * 48
        case .block(_, _, _, let ids, let extra), .ban(_, _, _, let ids, let extra):
            bytes += MemoryFootprint.of(ids) + MemoryFootprint.of(extra)
        }
        return bytes
    }
}
