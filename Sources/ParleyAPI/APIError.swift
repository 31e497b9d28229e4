import Hummingbird
import ParleyCluster
import ParleyIM
import ParleyRooms
import ParleyPlacement

/// A refused server-API request: a stable `code` (the JSON body's `code`), the HTTP status and a message.
/// Codes of the request layer are Parley's 104xx range; a refusal from a room command carries the room
/// error code unchanged (docs/rooms.md), one from the meta group its `MetaRefusal` code. docs/api.md lists
/// them all, and `APIErrorCode.allCases` is what the OpenAPI test checks the documentation against.
public struct APIError: Error, Sendable, Equatable {
    public var code: Int
    public var status: HTTPResponse.Status
    public var desc: String

    public init(code: Int, status: HTTPResponse.Status, desc: String) {
        self.code = code
        self.status = status
        self.desc = desc
    }

    public init(_ code: APIErrorCode, _ desc: String) {
        self.init(code: code.rawValue, status: code.status, desc: desc)
    }

    /// A room command's refusal, with the HTTP status a caller expects for it: bad input is 400, a missing
    /// room, member or element 404, a refused permission 403, a state that forbids the change 409.
    public init(_ error: RoomError) {
        let status: HTTPResponse.Status
        switch error.code {
        case .badParameter, .unknownOperation, .malformedCommand: status = .badRequest
        case .noPermission, .inBlocklist, .muted, .roomMuted, .anonymousCannotSend, .tempMuted, .globallyMuted,
             .notEntered, .rejectedByApp, .uncheckedByApp:
            status = .forbidden
        case .roomNotFound, .memberNotFound, .queueElementNotFound: status = .notFound
        case .historyGone: status = .gone
        case .requestReplayed: status = .forbidden  // as the per-node ledger answers a reused Nonce
        case .tooManyRequests, .sendRateLimited: status = .tooManyRequests
        case .alreadyInState, .tooManyFixedMembers, .roomClosed, .tooManyRooms, .queueFull,
             .invalidRoleTransition, .sessionAlreadyEntered:
            status = .conflict
        }
        self.init(code: error.code.rawValue, status: status, desc: error.message)
    }

    /// An IM command's refusal (docs/im.md), with the statuses the room codes of the same kind have.
    public init(_ error: ImError) {
        let status: HTTPResponse.Status = switch error.code {
        case .badParameter, .oneself: .badRequest
        case .blocked, .noPermission, .teamMuted, .applicationsRejected, .notMember, .requestReplayed, .rejectedByApp,
             .uncheckedByApp: .forbidden
        case .notFriend, .noRequest, .noSuchTeam, .noInvitation, .noSuchUser: .notFound
        case .alreadyFriends, .limitExceeded, .teamExists, .alreadyMember, .teamFull: .conflict
        case .historyGone: .gone
        case .tooManyRequests, .sendRateLimited: .tooManyRequests
        }
        self.init(code: error.code.rawValue, status: status, desc: error.message)
    }

    /// A meta group refusal (users, apps).
    public init(metaRefusal code: Int, _ message: String) {
        if let same = APIErrorCode(rawValue: code), [.reusedNonce, .tooManyRequests, .accountExists].contains(same) {
            self.init(same, message)  // A7: the meta group refused a replayed or excess request
            return
        }
        let status: HTTPResponse.Status = switch MetaRefusal(rawValue: code) {
        case .badParameter: .badRequest
        case .notFound: .notFound
        case .noPermission: .forbidden
        case .versionConflict, .alreadyExists, nil: .conflict
        }
        self.init(code: code, status: status, desc: message)
    }
}

/// The request layer's own refusals.
public enum APIErrorCode: Int, Sendable, CaseIterable {
    /// The body is not JSON, a field has the wrong type, or a required field is missing.
    case badJSON = 10400
    /// A field is out of range or oversized (checked before anything is submitted).
    case badField = 10414
    /// The body is larger than `ServerAPI.maxBodyBytes`.
    case bodyTooLarge = 10413
    /// AppKey, Nonce, CurTime or CheckSum is missing or malformed.
    case missingSignature = 10401
    /// No app with that AppKey.
    case unknownAppKey = 10402
    /// CheckSum is not SHA1(AppSecret + Nonce + CurTime), or CheckSum2 does not sign this request.
    case badChecksum = 10403
    /// The app requires CheckSum2 (method, path and body signed) and the request has only CheckSum.
    case signedBodyRequired = 10407
    /// CurTime is more than `RequestSignature.window` away from the node's clock.
    case staleCurTime = 10405
    /// The Nonce was already used by this app within the window.
    case reusedNonce = 10406
    /// The app has used so many nonces in the window that no more can be remembered.
    case tooManyRequests = 10429
    /// The account exists already (`/v1/user/create`).
    case accountExists = 10409
    /// No such account (`/v1/user/*`).
    case accountNotFound = 10404
    /// No leader for the shard or the meta group could be reached in time; retry.
    case unavailable = 10503

    public var status: HTTPResponse.Status {
        switch self {
        case .badJSON, .badField: .badRequest
        case .bodyTooLarge: .contentTooLarge
        case .missingSignature, .unknownAppKey, .badChecksum, .signedBodyRequired: .unauthorized
        case .staleCurTime, .reusedNonce: .forbidden
        case .tooManyRequests: .tooManyRequests
        case .accountExists: .conflict
        case .accountNotFound: .notFound
        case .unavailable: .serviceUnavailable
        }
    }
}
