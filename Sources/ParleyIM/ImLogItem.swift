/// One item of a user's conversation log (docs/im.md): what a device that logs in syncs by the user's own
/// sequence — one-to-one messages both ways and the system notifications to the user.
public typealias ImLogItem = LogEntry<ImLogKind>

public enum ImLogKind: LogContent {
    /// A one-to-one message to or from this user; `alert` is false when the receiver has the sender on its
    /// do-not-disturb list (delivered and counted unread, no push).
    case message(P2PMessage, alert: Bool)
    /// FriendAdd (seed 004): `source` did `operation` to `target` (this user).
    case friendNotification(source: String, target: String, operation: FriendOperation, message: String)
    /// A team system notification to this user (NIMSystemNotificationType): `source` invited it, applied
    /// to its team, rejected its application or its invitation.
    case teamNotice(TeamNotice, teamId: String, source: String, message: String)
}

extension ImLogKind {
    /// A one-to-one message by sender, receiver and clientMessageId: in a receiver's log it answers the
    /// sender's resend; a sender's copy (another receiver) never matches a message to itself.
    public var resendKey: String? {
        guard case .message(let m, _) = self, !m.clientMessageId.isEmpty else { return nil }
        return m.from + "\u{0}" + m.to + "\u{0}" + m.clientMessageId
    }

    public var parties: LogParties? {
        guard case .message(let m, _) = self else { return nil }
        return LogParties(from: m.from, to: m.to)
    }

    /// A one-to-one conversation is the same from either side.
    public static func conversationKey(_ p: LogParties) -> String {
        p.from < p.to ? p.from + "\u{0}" + p.to : p.to + "\u{0}" + p.from
    }

    public var estimatedBytes: Int {
        func of(_ s: String) -> Int { s.utf8.count + 16 }
        switch self {
        case .message(let m, _):
            return 64 + of(m.from) + of(m.to) + of(m.clientMessageId) + of(m.type) + of(m.body) + of(m.ext)
        case .friendNotification(let source, let target, _, let message):
            return 48 + of(source) + of(target) + of(message)
        case .teamNotice(_, let teamId, let source, let message):
            return 48 + of(teamId) + of(source) + of(message)
        }
    }
}

/// A one-to-one message (session type p2p).
public struct P2PMessage: Sendable, Equatable {
    public var from: String
    public var to: String
    /// The sender's id for it: a resend with the same one is answered with the first send's result.
    public var clientMessageId: String
    public var type: String
    public var body: String
    public var ext: String
    /// The receiver's sequence of the message: the same in the receiver's and the sender's copy.
    public var receiverSeq: UInt64

    public init(from: String, to: String, clientMessageId: String, type: String, body: String, ext: String, receiverSeq: UInt64) {
        self.from = from
        self.to = to
        self.clientMessageId = clientMessageId
        self.type = type
        self.body = body
        self.ext = ext
        self.receiverSeq = receiverSeq
    }
}

/// NIMSystemNotificationType's team kinds (NIM's values).
public enum TeamNotice: UInt8, Sendable, Equatable, CaseIterable {
    case apply = 0, applicationRejected = 1, invite = 2, invitationRejected = 3
}
