/// What a user asks of its own shard (seed 004). The operator is the context's actor, never a field, so a
/// client cannot act for another user.
public enum ImCommand: Sendable, Equatable {
    /// `requestFriend`: add (no verification), request, verify (accept the target's request), reject it.
    case friend(FriendOperation, target: String, message: String)
    /// `deleteFriend:removeAlias:`.
    case deleteFriend(target: String, removeRemark: Bool)
    /// `updateUser`: the operator's remark (alias) for a friend.
    case updateRemark(target: String, remark: String)
    /// `addToBlackList` / `removeFromBlackBlackList`.
    case setBlocked(target: String, Bool)
    /// `updateNotifyState:forUser:` with notify false / true.
    case setMuted(target: String, Bool)
}

/// NIMUserOperation.
public enum FriendOperation: UInt8, Sendable, Equatable, CaseIterable {
    case add = 1, request = 2, verify = 3, reject = 4
}

/// Who applies an IM command and when (the entry's time: apply never reads a clock).
public struct ImContext: Sendable, Equatable {
    public var actor: String
    public var time: Int64
    /// The app server acting for `actor` through the signed API (it alone may set a notification's notifyExt).
    public var byAppServer: Bool

    public init(actor: String, time: Int64, byAppServer: Bool = false) {
        self.actor = actor
        self.time = time
        self.byAppServer = byAppServer
    }
}

/// A one-to-one message as the sender asks for it; applied on the receiver's shard (docs/im.md).
public struct P2PSend: Sendable, Equatable {
    public var to: String
    public var clientMessageId: String
    public var type: String
    public var body: String
    public var ext: String

    public init(to: String, clientMessageId: String, type: String = "text", body: String, ext: String = "") {
        self.to = to
        self.clientMessageId = clientMessageId
        self.type = type
        self.body = body
        self.ext = ext
    }
}

/// A message taken: its place in the receiver's log and when; the receiver's devices' events.
public struct ImSent: Sendable, Equatable {
    public var seq: UInt64
    public var time: Int64
    public var events: [ImEvent]
}
