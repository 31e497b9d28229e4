import ParleyCluster
import ParleyPlacement

/// E4 / E5: chat accounts and their login tokens, kept in the meta group; the edge checks them at login.
enum UserEndpoints {
    struct Create: Decodable, Sendable {
        var accid: String
        var name: String?
        var icon: String?
        /// Generated when absent.
        var token: String?
        /// Unix ms after which the token is refused; 0 or absent = never.
        var tokenExpiresAt: Int64?
    }

    struct Account: Decodable, Sendable {
        var accid: String
    }

    struct Refresh: Decodable, Sendable {
        var accid: String
        var token: String?
        var tokenExpiresAt: Int64?
    }

    struct TokenAnswer: Encodable, Sendable {
        var accid: String
        var token: String
    }

    struct UserAnswer: Encodable, Sendable {
        var accid: String
        var name: String
        var icon: String
        var revoked: Bool
        var tokenExpiresAt: Int64
        var createdAt: Int64
    }

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/user/create", Create.self) { api, body, app in
            try FieldRule.id(body.accid, "accid")
            let token = try given(body.token) ?? newToken()
            // The meta group refuses an existing account (10409) in log order; no read first, so a replay of
            // this request meets its key (10406) before anything else.
            try await api.meta(.createUser(api.backend.metaSecrets.user(appKey: app, account: body.accid,
                                                                     name: body.name ?? "", avatar: body.icon ?? "",
                                                                     token: token,
                                                                     tokenExpiresAt: body.tokenExpiresAt ?? 0)))
            // The only time the token is seen: the meta group keeps its digest.
            return TokenAnswer(accid: body.accid, token: token)
        },
        .post("/v1/user/get", Account.self) { api, body, app in
            let user = try await existing(api, app, body.accid)
            return UserAnswer(accid: user.account, name: user.name, icon: user.avatar, revoked: user.revoked,
                              tokenExpiresAt: user.tokenExpiresAt, createdAt: user.createdAt)
        },
        // A new token (given or generated) replaces the old one at once and lifts a revocation.
        .post("/v1/user/refreshToken", Refresh.self) { api, body, app in
            var user = try await existing(api, app, body.accid)
            let token = try given(body.token) ?? newToken()
            user.tokenDigest = api.backend.metaSecrets.tokenDigest(appKey: app, account: user.account, token: token)
            if let expiry = body.tokenExpiresAt { user.tokenExpiresAt = expiry }
            try await api.meta(.putUser(user))
            return TokenAnswer(accid: user.account, token: token)
        },
        .post("/v1/user/revokeToken", Account.self) { api, body, app in
            _ = try await existing(api, app, body.accid)
            try await api.meta(.revokeToken(appKey: app, account: body.accid))
            return Done()
        },
    ]

    /// A token the app server chose: 1-256 bytes (checked here, since the meta group only sees its digest).
    private static func given(_ token: String?) throws -> String? {
        guard let token else { return nil }
        guard (1...MetaState.maxTokenBytes).contains(token.utf8.count) else {
            throw APIError(.badField, "token must be 1-\(MetaState.maxTokenBytes) bytes")
        }
        return token
    }

    private static func existing(_ api: ServerAPI, _ app: String, _ accid: String) async throws -> UserRecord {
        try FieldRule.id(accid, "accid")
        guard let user = try await api.backend.metaState().user(appKey: app, account: accid) else {
            throw APIError(.accountNotFound, "no account \(accid)")
        }
        return user
    }

    /// 32 hex digits from the system's secure generator.
    static func newToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(rng.next() as UInt32, radix: 16).leftPadded(8) }.joined()
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
