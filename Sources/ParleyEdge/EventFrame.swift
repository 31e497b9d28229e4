import ParleyRooms

/// The frames the edge writes: answers and events, encoded once each (an event's bytes are shared by every
/// local session it reaches).
public enum EventFrame {
    /// `{"event": …, "roomId": …, "seq": …, "data": …}` for one room event.
    public static func encode(_ event: RoomEvent) -> String {
        var j = JSONText()
        j.beginObject()
        j.field("event", event.kind.protocolName)
        j.field("roomId", AppScope.local(event.roomId))  // the id the client's app knows (A8)
        j.field("seq", event.seq)
        j.key("data")
        switch event.kind {
        case .message(let m):
            j.message(m)
        case .notification(let n):
            j.notification(n)
        case .kicked(let reason, let ext):
            j.beginObject()
            j.field("reason", Int(reason.rawValue))
            j.field("ext", ext)
            j.endObject()
        case .status(let status):
            j.beginObject()
            switch status {
            case .joined(let count, let time):
                j.field("status", "joined")
                j.field("memberCount", count)
                j.field("time", time)
            case .quit:
                j.field("status", "quit")
            case .lost:
                j.field("status", "lost")
            case .destroyed(let type):
                j.field("status", "destroyed")
                j.field("type", Int(type))
            }
            j.endObject()
        case .memberChange(let actions, let count):
            j.beginObject()
            j.key("actions")
            j.beginArray()
            for a in actions {
                j.beginObject()
                j.field("userId", a.userId)
                j.field("action", a.action == .join ? "join" : "quit")
                j.endObject()
            }
            j.endArray()
            j.field("memberCount", count)
            j.endObject()
        case .multiLoginSync(let joined, let reason, let time):
            j.beginObject()
            j.field("joined", joined)
            j.field("reason", Int(reason))
            j.field("time", time)
            j.endObject()
        case .block(let blocked, let duration, let time, let ids, let extra):
            j.beginObject()
            j.field("blocked", blocked)
            j.field("durationMs", duration)
            j.field("operateTime", time)
            j.field("userIds", strings: ids)
            j.field("extra", extra)
            j.endObject()
        case .ban(let type, let duration, let time, let ids, let extra):
            j.beginObject()
            j.field("banType", Int(type.rawValue))
            j.field("durationMs", duration)
            j.field("operateTime", time)
            j.field("userIds", strings: ids)
            j.field("extra", extra)
            j.endObject()
        }
        j.endObject()
        return j.string
    }

    /// A history item replayed as the live event it was (X2 resume and gap fill).
    public static func encode(_ item: HistoryItem, roomId: String) -> String {
        switch item {
        case .message(let m):
            return encode(RoomEvent(roomId: roomId, seq: m.seq, audience: .room, kind: .message(m)))
        case .notification(let n):
            return encode(RoomEvent(roomId: roomId, seq: n.seq, audience: .room, kind: .notification(n)))
        }
    }

    /// X2: `{"event": "gap", …}` — events in fromSeq…toSeq are lost and no longer in history.
    public static func gap(roomId: String, from: UInt64, to: UInt64) -> String {
        edgeEvent("gap", roomId: roomId) { j in
            j.field("fromSeq", from)
            j.field("toSeq", to)
        }
    }

    /// D2 / D3: `{"event": "shed", …}` — the room's messages in these seq ranges were not delivered to this
    /// connection (`reason` "rate": above the room's ceiling on this edge; "slow": the connection was behind);
    /// they are in history.
    public static func shed(roomId: String, reason: String, ranges: [ClosedRange<UInt64>]) -> String {
        edgeEvent("shed", roomId: roomId) { j in
            j.field("reason", reason)
            j.key("ranges")
            j.beginArray()
            for r in ranges {
                j.beginArray(); j.value(r.lowerBound); j.value(r.upperBound); j.endArray()
            }
            j.endArray()
        }
    }

    /// C5: `{"event": "reconnect", …}` — this edge is draining: enter the room again at one of `addresses`
    /// (best first) with `lastSeq` and `replacing: sessionId`, then close this connection.
    public static func reconnect(roomId: String, addresses: [String], sessionId: String) -> String {
        edgeEvent("reconnect", roomId: roomId) { j in
            j.key("addresses")
            j.beginArray()
            for a in addresses { j.value(a) }
            j.endArray()
            j.field("sessionId", sessionId)
        }
    }

    /// An event the edge itself makes (not a room event): `seq: 0`, and `data` written by `fields`.
    private static func edgeEvent(_ name: String, roomId: String, _ fields: (inout JSONText) -> Void) -> String {
        var j = JSONText()
        j.beginObject()
        j.field("event", name)
        j.field("roomId", AppScope.local(roomId))
        j.field("seq", UInt64(0))
        j.key("data")
        j.beginObject()
        fields(&j)
        j.endObject()
        j.endObject()
        return j.string
    }

    /// `{"id": …, "ok": true, "data": …}`; `data` writes the answer's object.
    public static func answer(id: Int64, _ data: (inout JSONText) -> Void) -> String {
        var j = JSONText()
        j.beginObject()
        j.field("id", id)
        j.field("ok", true)
        j.key("data")
        data(&j)
        j.endObject()
        return j.string
    }

    public static func error(id: Int64, _ error: ProtocolError) -> String {
        var j = JSONText()
        j.beginObject()
        j.field("id", id)
        j.field("ok", false)
        j.key("error")
        j.beginObject()
        j.field("code", error.code)
        j.field("message", error.message)
        if let wait = error.retryAfterMillis { j.field("retryAfterMs", wait) }
        j.endObject()
        j.endObject()
        return j.string
    }
}

extension RoomEventKind {
    var protocolName: String {
        switch self {
        case .message: return "message"
        case .notification: return "notification"
        case .kicked: return "kicked"
        case .status: return "status"
        case .memberChange: return "memberChange"
        case .multiLoginSync: return "multiLoginSync"
        case .block: return "block"
        case .ban: return "ban"
        }
    }
}
