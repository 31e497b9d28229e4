import NIOCore
import ParleyRooms

/// SPEC W3: what the app server said about a client's message before it is stored.
public enum PreSendVerdict: Sendable, Hashable {
    case allow
    /// Allowed with the body and/or the ext replaced (nil: kept).
    case replace(body: String?, ext: String?)
    /// Not stored: the sender hears the app's code and reason.
    case reject(appCode: Int, reason: String)
    /// The app server did not answer usably (timeout, error, malformed answer) and the app refuses unchecked
    /// messages (`onFailure: refuse`).
    case unchecked(why: String)
}

/// Where a shard leader asks whether a client's message may be stored (SPEC W3, docs/webhooks.md): the node's
/// webhook caller. The leader asks after the message's budget was charged (A1) and proposes on the answer;
/// the wait holds up that message only.
public protocol PreSendGate: Sendable {
    /// How long a message to `roomId` may wait for its check (its app's `timeoutMillis`), nil when its app
    /// checks none before they are stored. Cheap: asked on every message.
    func checkMillis(roomId: String) -> Int?
    /// The app server's verdict on `message` from `sender` (a timeout or a failure already turned into the
    /// app's policy); nil when its room is not checked. Completes on any loop.
    func verdict(on message: SendMessage, sender: SessionIdentity, eventLoop: EventLoop) -> EventLoopFuture<PreSendVerdict>?
}

extension PreSendVerdict {
    /// What the sender hears instead of a stored message (nil: it is proposed).
    var refusal: RoomError? {
        switch self {
        case .allow, .replace: nil
        case .reject(let code, let reason): RoomError(.rejectedByApp, "rejected by the app (code \(code)): \(reason)")
        case .unchecked(let why): RoomError(.uncheckedByApp, "the app's check did not answer (\(why)) and the app refuses unchecked messages")
        }
    }

    /// The message to propose when allowed.
    func applied(to message: SendMessage) -> SendMessage {
        guard case .replace(let body, let ext) = self else { return message }
        var m = message
        if let body { m.body = body }
        if let ext { m.ext = ext }
        return m
    }
}
