import ParleyRooms

/// A request the edge refuses before (or instead of) reaching the cluster: docs/protocol.md, "Error codes".
public enum ProtocolError: Error, Sendable, Equatable {
    /// 4000: not JSON, not an object, no integer id or string op, or a binary frame.
    case malformedFrame(String)
    case noCommonVersion
    case helloRequired
    case helloTwice
    case unknownOp(String)
    case frameTooLarge(Int)
    /// 4005 (issue 33): a message sent in fragments grew past `EdgeSettings.fragmentedMessageBytes`.
    case fragmentedMessageTooLarge(Int)
    /// 4006 (issue 33): a message sent in fragments was not finished within `EdgeSettings.messageMillis`.
    case messageTooSlow(Int)
    case badToken
    case tokenExpired
    case unknownApp
    case otherAccount
    case anonymousNeedsProfile
    case tokenRevoked
    case alreadyEntered
    /// 4017: too many failed logins from this address or for this account; retry after this many ms.
    case tooManyFailedLogins(retryAfterMillis: Int64)
    /// 414: a required field is missing.
    case missingField(String)
    /// 414: a field has the wrong JSON type.
    case wrongType(String, String)
    /// 414: a field has a value the protocol does not define.
    case badValue(String, String)
    /// 5030 / 5040 / room-domain codes, carried through.
    case cluster(Int, String)
    /// 416 (A1): this connection sent more requests than `EdgeSettings.requestsPerSecond` allows.
    case tooManyRequests(retryAfterMillis: Int64)
    /// 4018 (issue 19): an IM op before a successful `imLogin`.
    case imLoginRequired

    public var code: Int {
        switch self {
        case .malformedFrame: return 4000
        case .noCommonVersion: return 4001
        case .helloRequired: return 4002
        case .helloTwice: return 4003
        case .unknownOp: return 4004
        case .frameTooLarge, .fragmentedMessageTooLarge: return 4005
        case .messageTooSlow: return 4006
        case .badToken: return 4010
        case .tokenExpired: return 4011
        case .unknownApp: return 4012
        case .otherAccount: return 4013
        case .anonymousNeedsProfile: return 4014
        case .tokenRevoked: return 4015
        case .alreadyEntered: return 4016
        case .tooManyFailedLogins: return 4017
        case .imLoginRequired: return 4018
        case .missingField, .wrongType, .badValue: return RoomErrorCode.badParameter.rawValue
        case .cluster(let code, _): return code
        case .tooManyRequests: return RoomErrorCode.sendRateLimited.rawValue
        }
    }

    public var message: String {
        switch self {
        case .malformedFrame(let why): return "malformed frame: \(why)"
        case .noCommonVersion: return "no protocol version in common (this edge speaks 1)"
        case .helloRequired: return "hello required first"
        case .helloTwice: return "hello sent twice"
        case .unknownOp(let op): return "unknown op \(op)"
        case .frameTooLarge(let limit): return "frame larger than \(limit) bytes"
        case .fragmentedMessageTooLarge(let limit):
            return "a message in fragments larger than \(limit) bytes (send a larger one in one frame)"
        case .messageTooSlow(let ms): return "a message in fragments was not finished within \(ms) ms"
        case .badToken: return "bad token or unknown account"
        case .tokenExpired: return "token expired"
        case .unknownApp: return "unknown app key"
        case .otherAccount: return "another account or mode is already in use on this connection"
        case .anonymousNeedsProfile: return "anonymous enter needs nickname and avatar"
        case .tokenRevoked: return "token revoked"
        case .alreadyEntered: return "already in this room on this connection"
        case .tooManyFailedLogins(let ms): return "too many failed logins; retry after \(ms) ms"
        case .imLoginRequired: return "imLogin required first"
        case .missingField(let f): return "missing field \(f)"
        case .wrongType(let f, let t): return "field \(f) must be \(t)"
        case .badValue(let f, let why): return "field \(f): \(why)"
        case .cluster(_, let m): return m
        case .tooManyRequests(let ms): return "too many requests on this connection; retry after \(ms) ms"
        }
    }

    /// Authentication failures end the connection (close code 4401).
    public var closesConnection: Bool {
        switch self {
        case .badToken, .tokenExpired, .unknownApp, .tokenRevoked, .tooManyFailedLogins: return true
        default: return false
        }
    }

    /// The protocol error for a failure of `EdgeCluster.submit` or a refused room command.
    /// How long to wait before trying again (416, 4017): sent as `retryAfterMs`.
    public var retryAfterMillis: Int64? {
        switch self {
        case .tooManyFailedLogins(let ms), .tooManyRequests(let ms): return ms
        case .cluster(let code, let message) where code == RoomErrorCode.sendRateLimited.rawValue:
            return RoomError(.sendRateLimited, message).retryAfterMillis
        default: return nil
        }
    }

    public static func from(_ error: any Error) -> ProtocolError {
        switch error {
        case let e as ProtocolError: return e
        case let e as RoomError: return .cluster(e.code.rawValue, e.message)
        case EdgeClusterError.unavailable(let why): return .cluster(5030, "no reachable leader for the room: \(why)")
        case EdgeClusterError.timedOut: return .cluster(5040, "the cluster did not answer in time")
        default: return .cluster(5030, "cluster error: \(error)")
        }
    }
}
