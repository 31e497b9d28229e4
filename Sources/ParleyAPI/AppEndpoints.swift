import ParleyCluster
import ParleyPlacement

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

    /// W1: `/v1/app/setWebhooks` — where the app's webhooks go and what they carry (docs/webhooks.md).
    struct Webhooks: Decodable, Sendable {
        var enabled: Bool?
        var url: String
        var events: [String]?
        var preSend: PreSend?
        var timeoutMillis: Int?
        /// "allow" (the default: a message whose pre-send callback timed out or failed is stored) or "refuse".
        var onFailure: String?

        struct PreSend: Codable, Sendable {
            /// "all", or the room ids.
            var rooms: Rooms?
            /// One-to-one and team messages too.
            var im: Bool?
        }

        enum Rooms: Codable, Sendable {
            case all
            case named([String])

            init(from decoder: any Decoder) throws {
                let c = try decoder.singleValueContainer()
                if let word = try? c.decode(String.self) {
                    guard word == "all" else { throw APIError(.badField, "preSend.rooms must be \"all\" or a list of room ids") }
                    self = .all
                } else {
                    self = .named(try c.decode([String].self))
                }
            }

            func encode(to encoder: any Encoder) throws {
                var c = encoder.singleValueContainer()
                switch self {
                case .all: try c.encode("all")
                case .named(let rooms): try c.encode(rooms)
                }
            }
        }

        func settings() throws -> WebhookSettings {
            var events: [WebhookSettings.Event] = []
            for name in self.events ?? [] {
                guard let e = WebhookSettings.Event(rawValue: name) else {
                    throw APIError(.badField, "no webhook event \(name): one of \(WebhookSettings.Event.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                events.append(e)
            }
            let policy: WebhookSettings.FailurePolicy
            switch onFailure ?? "allow" {
            case "allow": policy = .allow
            case "refuse": policy = .refuse
            default: throw APIError(.badField, "onFailure must be \"allow\" or \"refuse\"")
            }
            let rooms: WebhookSettings.PreSendRooms = switch preSend?.rooms {
            case nil: .none
            case .all: .all
            case .named(let ids): .named(ids)
            }
            let settings = WebhookSettings(enabled: enabled ?? true, url: url, events: events, preSendRooms: rooms,
                                           preSendIm: preSend?.im ?? false,
                                           timeoutMillis: timeoutMillis ?? WebhookSettings.defaultTimeoutMillis,
                                           onFailure: policy)
            if let problem = settings.problem { throw APIError(.badField, problem) }
            return settings
        }
    }

    /// An app's webhooks as `/v1/app/getWebhooks` and `/v1/app/setWebhooks` answer them.
    struct WebhooksAnswer: Encodable, Sendable {
        struct Settings: Encodable, Sendable {
            var enabled: Bool
            var url: String
            var events: [String]
            var preSend: Webhooks.PreSend
            var timeoutMillis: Int
            var onFailure: String
        }

        var webhooks: Settings?

        init(_ s: WebhookSettings?) {
            webhooks = s.map { s in
                let rooms: Webhooks.Rooms? = switch s.preSendRooms {
                case .none: nil
                case .all: .all
                case .named(let ids): .named(ids)
                }
                return Settings(enabled: s.enabled, url: s.url, events: s.events.map(\.rawValue),
                                preSend: Webhooks.PreSend(rooms: rooms, im: s.preSendIm), timeoutMillis: s.timeoutMillis,
                                onFailure: s.onFailure == .allow ? "allow" : "refuse")
            }
        }
    }

    struct Empty: Decodable, Sendable {}

    static let all: [ServerAPI.Endpoint] = [
        .post("/v1/app/setSigning", Signing.self) { api, body, app in
            try await api.meta(.setAppSigning(appKey: app, requireSignedBody: body.requireSignedBody))
            return SigningAnswer(requireSignedBody: body.requireSignedBody)
        },
        .post("/v1/app/setWebhooks", Webhooks.self) { api, body, app in
            let settings = try body.settings()
            // SPEC W1 and the operator's rule: a target this node would not call is refused now, not later.
            if let target = WebhookTarget(url: settings.url), let refusal = api.backend.webhookTargets.refusal(target) {
                throw APIError(.badField, refusal)
            }
            try await api.setWebhooks(settings, app: app)
            return WebhooksAnswer(settings)
        },
        .post("/v1/app/getWebhooks", Empty.self) { api, _, app in
            WebhooksAnswer(try await api.backend.metaState().webhooks[app])
        },
        .post("/v1/app/removeWebhooks", Empty.self) { api, _, app in
            try await api.setWebhooks(nil, app: app)
            return WebhooksAnswer(nil)
        },
    ]
}
