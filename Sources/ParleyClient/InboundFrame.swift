import Foundation

/// One frame from the server, sorted into an answer or an event (docs/protocol.md "Requests, answers, events").
/// Answers keep the raw frame: only the caller knows which type `data` has.
enum InboundFrame: Sendable {
    case answer(id: Int, Result<Data, ChatroomError>)
    /// `event` is nil for an event name this SDK version does not know (ignored, not an error).
    case event(roomId: String, seq: Int64, event: ChatroomEvent?)
    /// C5: the edge is draining; enter the room at `addresses` replacing `sessionId` (handled by the client,
    /// not passed to the app).
    case reconnect(roomId: String, addresses: [String], sessionId: String)

    private struct Head: Decodable {
        var id: Int?
        var ok: Bool?
        var error: ChatroomError?
        var event: String?
        var roomId: String?
        var seq: Int64?
    }

    struct DataOf<T: Decodable>: Decodable { var data: T }
    /// `{}` answers.
    struct Nothing: Decodable, Sendable {}

    private struct Kicked: Decodable { var reason: KickReason; var ext: String }
    private struct Gap: Decodable { var fromSeq: Int64; var toSeq: Int64 }
    private struct Shed: Decodable { var reason: String; var ranges: [[Int64]] }
    private struct Reconnect: Decodable { var addresses: [String]; var sessionId: String }

    static func decode(_ text: String) throws -> InboundFrame {
        let data = Data(text.utf8)
        let decoder = JSONDecoder()
        let head = try decoder.decode(Head.self, from: data)
        if let id = head.id {
            if head.ok == true { return .answer(id: id, .success(data)) }
            return .answer(id: id, .failure(head.error ?? ChatroomError(code: ChatroomError.badParameter, message: "answer without ok or error")))
        }
        guard let name = head.event, let roomId = head.roomId else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "neither an answer nor an event"))
        }
        func payload<T: Decodable>(_: T.Type) throws -> T { try decoder.decode(DataOf<T>.self, from: data).data }
        if name == "reconnect" {
            let r = try payload(Reconnect.self)
            return .reconnect(roomId: roomId, addresses: r.addresses, sessionId: r.sessionId)
        }
        let event: ChatroomEvent?
        switch name {
        case "message": event = .message(roomId: roomId, try payload(Message.self))
        case "notification": event = .notification(roomId: roomId, try payload(ChatroomNotification.self))
        case "kicked":
            let k = try payload(Kicked.self)
            event = .kicked(roomId: roomId, reason: k.reason, ext: k.ext)
        case "status": event = .status(roomId: roomId, try payload(RoomStatus.self))
        case "memberChange": event = .memberChange(roomId: roomId, try payload(MemberChange.self))
        case "multiLoginSync": event = .multiLoginSync(roomId: roomId, try payload(MultiLoginSync.self))
        case "block": event = .block(roomId: roomId, try payload(BlockNotice.self))
        case "ban": event = .ban(roomId: roomId, try payload(BanNotice.self))
        case "gap":
            let g = try payload(Gap.self)
            event = .gap(roomId: roomId, fromSeq: g.fromSeq, toSeq: g.toSeq)
        case "shed":
            let s = try payload(Shed.self)
            let ranges = s.ranges.compactMap { r in r.count == 2 && r[0] <= r[1] ? r[0]...r[1] : nil }
            event = .shed(roomId: roomId, reason: s.reason, ranges: ranges)
        default: event = nil
        }
        return .event(roomId: roomId, seq: head.seq ?? 0, event: event)
    }

    /// The typed `data` of a successful answer.
    static func data<T: Decodable>(_: T.Type, from frame: Data) throws -> T {
        try JSONDecoder().decode(DataOf<T>.self, from: frame).data
    }
}
