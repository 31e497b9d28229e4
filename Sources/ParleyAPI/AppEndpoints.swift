import ParleyCluster

/// The calling app's own settings, kept in the meta group.
enum AppEndpoints {
    struct Signing: Decodable, Sendable {
        /// true: every request of this app must carry CheckSum2 (method, path and body signed); NIM's
        /// CheckSum alone is then refused with 10407.
        var requireSignedBody: Bool
    }

    struct SigningAnswer: Encodable, Sendable {
        var requireSignedBody: Bool
    }

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/app/setSigning", Signing.self) { api, body, app in
            try await api.meta(.setAppSigning(appKey: app, requireSignedBody: body.requireSignedBody))
            return SigningAnswer(requireSignedBody: body.requireSignedBody)
        },
    ]
}
