import Foundation
import Hummingbird
import Logging
import Metrics
import ParleyCluster
import ParleyJSON
import ParleyRooms
import ParleyPlacement

/// The server API for app servers: `POST /v1/<area>/<action>` with a JSON body, signed NIM-style
/// (`RequestSignature`), answered by whichever node receives it. Room commands go to their shard leader
/// as `.appServer`; users and tokens go to the meta group. Success is `{"code":200,"data":…}`, a refusal
/// `{"code":N,"desc":"…"}` with a 4xx status (503 only when no leader answered). docs/api.md and
/// docs/openapi.yaml describe every endpoint; `ServerAPI.endpoints` is the one table both the router and
/// the OpenAPI test read.
public struct ServerAPI: Sendable {
    public let backend: any ServerAPIBackend
    public let nonces: NonceLedger
    /// The app whose rooms live in the empty namespace (`AppScope`; `--legacy-rooms-app`).
    public let legacyRoomsApp: String?
    private let keyring = AppKeyring()
    private let unverifiedBodies = UnverifiedBodyBudget(limit: ServerAPI.maxUnverifiedBodyBytes)
    private let refusals: SignatureRefusalLog
    /// Unix seconds; injectable so a test can check the window without waiting.
    let clock: @Sendable () -> Int64

    public static let maxBodyBytes = 256 * 1024

    public init(backend: any ServerAPIBackend, nonces: NonceLedger = NonceLedger(), legacyRoomsApp: String? = nil,
                logger: Logger = Logger(label: "parley.api"), metrics: any MetricsFactory = NOOPMetricsHandler.instance,
                clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.backend = backend
        refusals = SignatureRefusalLog(logger: logger, metrics: metrics)
        self.nonces = nonces
        self.legacyRoomsApp = legacyRoomsApp
        self.clock = clock
    }

    /// One endpoint: its path and what it does with the verified request.
    public struct Endpoint: Sendable {
        public let path: String
        let run: @Sendable (ServerAPI, Call) async throws -> any Encodable & Sendable
    }

    /// The namespace of an app's rooms (A8, `AppScope`).
    func namespace(_ appKey: String) -> String {
        AppScope.namespace(ofApp: appKey, legacyApp: legacyRoomsApp)
    }

    /// A verified request: the caller's app, its rooms' namespace and the body.
    struct Call: Sendable {
        var appKey: String
        var namespace: String
        var body: ByteBuffer

        /// Decodes the body with its `roomId` and `roomIds` in the caller's namespace (A8): the one place
        /// where an app server's room ids become the cluster's, so no endpoint can reach another app's room.
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let data = Data(buffer: body)
            guard let value = try? JSONDecoder().decode(JSONValue.self, from: data) else {
                // Not JSON: the endpoint's decoder says why, as before. (Any JSON reads as a JSONValue, so a
                // body that decodes here after all is refused rather than left unscoped.)
                _ = try decoding(T.self, data)
                throw APIError(.badJSON, "the body is not JSON")
            }
            return try decoding(T.self, try scopedRoomIds(value) ?? data)
        }

        /// The body again with its room ids in the caller's namespace; nil when nothing changes.
        private func scopedRoomIds(_ value: JSONValue) throws -> Data? {
            guard case .object(var fields) = value else { return nil }
            func scoped(_ value: JSONValue) throws -> JSONValue {
                guard case .string(let id) = value else { return value }  // a wrong type fails the decode
                guard AppScope.isLocal(id) else { throw APIError(.badField, "room ids must not contain U+001F") }
                return .string(AppScope.scoped(id, in: namespace))
            }
            var changed = false
            if let id = fields["roomId"] {
                fields["roomId"] = try scoped(id)
                changed = true
            }
            if case .array(let ids)? = fields["roomIds"] {
                fields["roomIds"] = .array(try ids.map(scoped))
                changed = true
            }
            return changed && !namespace.isEmpty ? try JSONEncoder().encode(JSONValue.object(fields)) : nil
        }

        private func decoding<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
            do {
                return try JSONDecoder().decode(T.self, from: data)
            } catch let error as DecodingError {
                throw APIError(.badJSON, Self.describe(error))
            } catch {
                throw APIError(.badJSON, "the body is not JSON")
            }
        }

        private static func describe(_ error: DecodingError) -> String {
            func at(_ path: [any CodingKey]) -> String {
                path.isEmpty ? "the body" : path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            }
            switch error {
            case .typeMismatch(_, let c): return "\(at(c.codingPath)) has the wrong type"
            case .valueNotFound(_, let c): return "\(at(c.codingPath)) is null"
            case .keyNotFound(let key, let c): return "\(at(c.codingPath + [key])) is required"
            case .dataCorrupted(let c): return "\(at(c.codingPath)): \(c.debugDescription)"
            @unknown default: return "the body does not match the endpoint"
            }
        }
    }

    /// Every endpoint, in documentation order.
    public static var endpoints: [Endpoint] {
        UserEndpoints.all + RoomEndpoints.all + MemberEndpoints.all + QueueEndpoints.all + MessageEndpoints.all
            + AppEndpoints.all + ImEndpoints.all + TeamEndpoints.all + ReceiptEndpoints.all
    }

    public static var paths: [String] { endpoints.map(\.path) }

    public func add<Context: RequestContext>(to router: Router<Context>) {
        for endpoint in Self.endpoints {
            router.post(RouterPath(endpoint.path)) { request, context -> Response in
                await self.answer(endpoint, request, context)
            }
        }
    }

    private func answer(_ endpoint: Endpoint, _ request: Request, _ context: some RequestContext) async -> Response {
        var bodyRead = false
        do {
            let signature = try RequestSignature { name in
                let wanted = name.lowercased()
                return request.headers.first { $0.name.canonicalName == wanted }?.value
            }
            // The app, the time window and NIM's CheckSum are checked before a byte of the body is read.
            let now = clock()
            guard let app = try await keyring.app(signature.appKey, now: now, secrets: backend.metaSecrets,
                                                read: backend.metaState) else {
                throw APIError(.unknownAppKey, "no app with this AppKey")
            }
            try signature.verifyHeaders(secret: app.secret, now: now, requireSignedBody: app.requiresSignedBody)
            let body = try await readBody(request, headersProveTheSender: signature.checkSum != nil)
            bodyRead = true
            try signature.verifyBody(secret: app.secret, method: request.method.rawValue, path: request.uri.path,
                                     body: Array(body.readableBytesView))
            // Recorded only for a request that verified, so a forger cannot fill the ledger.
            try nonces.record(appKey: signature.appKey, nonce: signature.nonce, curTime: signature.curTime, now: now)
            let request = SignedRequest(appKey: signature.appKey, nonce: signature.nonce, curTime: signature.curTime, now: now)
            if !app.requiresSignedBody { try await claimNonce(request, appKey: signature.appKey) }
            let data = try await SignedRequest.$current.withValue(request) {
                try await endpoint.run(self, Call(appKey: signature.appKey, namespace: namespace(signature.appKey), body: body))
            }
            return Self.success(data)
        } catch let error as APIError {
            refusals.record(error, appKey: request.headers.first { $0.name.canonicalName == "appkey" }?.value,
                            path: request.uri.path)
            var response = Self.failure(error)
            // A caller that failed authentication, or whose body was not read, gets no second request on this
            // connection, and what it has not sent of its body is not waited for: the edge closes the
            // connection once this answer is written (`ClosingAnswer`).
            if !bodyRead || error.status == .unauthorized || error.code == APIErrorCode.staleCurTime.rawValue {
                response.headers[.connection] = "close"
            }
            return response
        } catch {
            // Only routing fails this way (no leader in time): bad input is refused above as an APIError.
            return Self.failure(APIError(.unavailable, "no leader answered in time; retry (\(error))"))
        }
    }

    /// SPEC T2: an app that accepts NIM's CheckSum (which signs neither the path nor the body, so its headers
    /// could carry any call) has every request's nonce claimed in the meta group before the call runs, reads
    /// included: captured headers then carry no second call of any kind, on any node. The claim costs a meta
    /// write per request (CheckSum2, which signs the call itself, needs none). Until every node reads the
    /// claim (during a rolling upgrade) a node's own `NonceLedger` is all there is.
    private func claimNonce(_ request: SignedRequest, appKey: String) async throws {
        guard await backend.everyNodeHas(.appSigning) else { return }
        if case .refused(let code, let message) = try await backend.submitMeta(.claimNonce(scope: appKey),
                                                                                requestKey: request.nonceClaim) {
            throw APIError(metaRefusal: code, message)
        }
    }

    /// Reads the body (at most `maxBodyBytes`). When only CheckSum2 signs the request, who sent it is known
    /// only once the body is read: the bytes of such bodies are charged to one budget per node as they arrive
    /// (`UnverifiedBodyBudget`), so a crowd of forged requests cannot hold a node's memory, and one that
    /// announces bodies it never sends holds nothing that signed callers need.
    private func readBody(_ request: Request, headersProveTheSender: Bool) async throws -> ByteBuffer {
        if headersProveTheSender {
            do {
                return try await request.body.collect(upTo: Self.maxBodyBytes)
            } catch {
                throw APIError(.bodyTooLarge, "the body is larger than \(Self.maxBodyBytes) bytes")
            }
        }
        // What is charged is the memory the body's buffer holds (its capacity, grown here rather than by the
        // buffer's own doubling), so the budget bounds what the node allocates, not only what it was sent.
        var body = ByteBuffer()
        var charged = 0
        defer { unverifiedBodies.give(charged) }
        for try await chunk in request.body {
            let needed = body.readableBytes + chunk.readableBytes
            guard needed <= Self.maxBodyBytes else {
                throw APIError(.bodyTooLarge, "the body is larger than \(Self.maxBodyBytes) bytes")
            }
            if needed > body.capacity {
                // A power of two, as a ByteBuffer's storage is: what is charged is what is allocated.
                let grown = min(Self.maxBodyBytes, 1 << (Int.bitWidth - (needed - 1).leadingZeroBitCount))
                guard unverifiedBodies.take(grown - charged) else {
                    throw APIError(.tooManyRequests, "too many request bytes being read before their signature is known; retry")
                }
                charged = grown
                body.reserveCapacity(grown)
            }
            var chunk = chunk
            body.writeBuffer(&chunk)
        }
        return body
    }

    /// Bytes of body buffers held at once before their CheckSum2 could be checked: 4 MiB, 16 bodies of the
    /// largest size (an app server's bodies are mostly a few hundred bytes).
    public static let maxUnverifiedBodyBytes = 16 * maxBodyBytes

    static func success(_ data: any Encodable & Sendable) -> Response {
        struct Envelope: Encodable {
            var code = 200
            var data: any Encodable
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Key.self)
                try c.encode(code, forKey: .code)
                try data.encode(to: c.superEncoder(forKey: .data))
            }
            enum Key: String, CodingKey { case code, data }
        }
        return json(.ok, Envelope(data: data))
    }

    static func failure(_ error: APIError) -> Response {
        struct Refusal: Encodable { var code: Int; var desc: String }
        return json(error.status, Refusal(code: error.code, desc: error.desc))
    }

    private static func json(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = (try? encoder.encode(value)) ?? Data(#"{"code":10503,"desc":"unencodable answer"}"#.utf8)
        return Response(status: status, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    // MARK: Helpers for the endpoint tables

    /// Runs a room command on the room's shard; a domain refusal becomes its `APIError`.
    func room(_ command: RoomCommand, roomId: String) async throws -> RoomReply {
        try FieldRule.roomId(roomId)
        return try Self.reply(try await submit(command, shard: backend.shard(ofRoom: roomId)))
    }

    /// Every command a request proposes goes through here or `meta`: each carries the request's key for
    /// its group (SPEC A7).
    func submit(_ command: RoomCommand, shard: Int) async throws -> ApplyOutcome {
        try await backend.submit(command, shard: shard, requestKey: SignedRequest.current?.key(for: "s\(shard)"))
    }

    static func reply(_ outcome: ApplyOutcome) throws -> RoomReply {
        switch outcome.result {
        case .success(let reply): return reply
        case .failure(let error): throw APIError(error)
        }
    }

    /// Runs a command on every shard (app policy, M9 global mute): the state machine keeps both per shard.
    /// A refusal in `tolerated` (e.g. "not muted" on a shard where the user never was) counts as unchanged;
    /// any other stops the walk, and the shards already done keep the change: repeating the call is safe.
    /// Returns how many shards changed.
    func everyShard(_ command: RoomCommand, tolerating tolerated: Set<RoomErrorCode> = []) async throws -> Int {
        var changed = 0
        for shard in 0..<backend.shardCount {
            let outcome = try await submit(command, shard: shard)
            if let code = outcome.errorCode, tolerated.contains(code) { continue }
            _ = try Self.reply(outcome)
            changed += 1
        }
        return changed
    }

    /// A1: the app's connection request budget, kept in the meta group (nil: the node's default). Until every
    /// node reads it (a rolling upgrade) an app that asks for one is answered 503, and one that asks for none
    /// while it has none writes nothing.
    func setConnectionBudget(_ budget: ConnectionBudget?, app: String) async throws {
        if budget == nil, try await backend.metaState().connectionBudgets[app] == nil { return }
        guard await backend.everyNodeHas(.connectionBudgets) else {
            throw APIError(.unavailable, "a node of the cluster does not read connection budgets yet (a rolling upgrade); retry once every node runs this version")
        }
        try await meta(.setConnectionBudget(appKey: app, budget))
    }

    /// D3: the app's room ceiling, kept in the meta group (nil: none), under the same rule as the connection
    /// budget during a rolling upgrade.
    func setRoomCeiling(_ messagesPerSecond: Int?, app: String) async throws {
        if messagesPerSecond == nil, try await backend.metaState().roomCeilings[app] == nil { return }
        guard await backend.everyNodeHas(.messagePriority) else {
            throw APIError(.unavailable, "a node of the cluster does not read room ceilings yet (a rolling upgrade); retry once every node runs this version")
        }
        try await meta(.setRoomCeiling(appKey: app, messagesPerSecond: messagesPerSecond))
    }

    /// W1: the app's webhooks, kept in the meta group (nil: none). Until every node reads them (a rolling
    /// upgrade) an app that sets some is answered 503, and removing none writes nothing.
    func setWebhooks(_ settings: WebhookSettings?, app: String) async throws {
        if settings == nil, try await backend.metaState().webhooks[app] == nil { return }
        guard await backend.everyNodeHas(.webhooks) else {
            throw APIError(.unavailable, "a node of the cluster does not read webhooks yet (a rolling upgrade); retry once every node runs this version")
        }
        if settings?.preSendIm == true, !(await backend.everyNodeHas(.imPreSend)) {
            throw APIError(.unavailable, "a node of the cluster does not check one-to-one and team messages yet (a rolling upgrade); retry once every node runs this version")
        }
        try await meta(.setWebhooks(appKey: app, settings))
    }

    func meta(_ command: MetaCommand) async throws {
        if case .refused(let code, let message) = try await backend.submitMeta(command,
                                                                                requestKey: SignedRequest.current?.key(for: "meta")) {
            throw APIError(metaRefusal: code, message)
        }
    }
}

/// Answers without a payload.
struct Done: Encodable, Sendable {}

extension ServerAPI.Endpoint {
    /// An endpoint whose body decodes as `B`; `run` gets the API, the body and the caller's AppKey.
    static func post<B: Decodable>(_ path: String, _ body: B.Type,
                                   _ run: @escaping @Sendable (ServerAPI, B, String) async throws -> any Encodable & Sendable)
        -> Self {
        Self(path: path) { api, call in try await run(api, try call.decode(B.self), call.appKey) }
    }
}
