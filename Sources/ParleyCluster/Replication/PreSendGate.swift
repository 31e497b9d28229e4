import NIOCore
import ParleyIM
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
    /// The same for a client's one-to-one or team message (`preSend.im`): how long it may wait, nil when the
    /// app of `account` (app-scoped) checks none. Cheap: asked on every IM message.
    func imCheckMillis(account: String) -> Int?
    func verdict(onIm message: ImPreSend, eventLoop: EventLoop) -> EventLoopFuture<PreSendVerdict>?
}

/// SPEC W3 for IM: a client's one-to-one or team message as its app server is shown it before it is stored.
/// Ids are app-scoped here (the caller shows the app its own).
public struct ImPreSend: Sendable {
    public enum Conversation: Sendable {
        case p2p(to: String)
        case team(teamId: String)
    }

    public var conversation: Conversation
    public var from: String
    public var clientMessageId: String
    public var type: String
    public var body: String
    public var ext: String

    /// The message of an IM command a client session sends (nil: the command is no message).
    public init?(_ command: ImShardCommand, from account: String) {
        switch command {
        case .send(let m):
            self.init(conversation: .p2p(to: m.to), from: account, clientMessageId: m.clientMessageId, type: m.type,
                      body: m.body, ext: m.ext)
        case .team(let teamId, .send(let id, let type, let body, let ext)):
            self.init(conversation: .team(teamId: teamId), from: account, clientMessageId: id, type: type, body: body, ext: ext)
        default:
            return nil
        }
    }

    public init(conversation: Conversation, from: String, clientMessageId: String, type: String, body: String, ext: String) {
        self.conversation = conversation
        self.from = from
        self.clientMessageId = clientMessageId
        self.type = type
        self.body = body
        self.ext = ext
    }

    /// The command to propose when the verdict allows it (a replacement applied).
    func command(applying verdict: PreSendVerdict, to original: ImShardCommand) -> ImShardCommand {
        guard case .replace(let newBody, let newExt) = verdict else { return original }
        switch original {
        case .send(var m):
            if let newBody { m.body = newBody }
            if let newExt { m.ext = newExt }
            return .send(m)
        case .team(let teamId, .send(let id, let type, let body, let ext)):
            return .team(teamId: teamId, .send(clientMessageId: id, type: type, body: newBody ?? body, ext: newExt ?? ext))
        default:
            return original
        }
    }
}

extension PreSendVerdict {
    /// What an IM sender hears instead of a stored message (nil: it is proposed).
    var imRefusal: ImError? {
        refusal.map { ImError($0.code == .rejectedByApp ? .rejectedByApp : .uncheckedByApp, $0.message) }
    }

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
