import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import ParleyAPI
import ParleyCluster
import ParleyIM
import ParleyPlacement
import ParleyShardState
import ParleyRooms
import ParleyTransport
import Synchronization

/// SPEC W3 on a node: asks an app server about a client's message before it is stored (docs/webhooks.md,
/// "Pre-send moderation"). The apps' webhook settings and secrets come from the meta group (`update`, each
/// time the node reads its registry); the calls go through AsyncHTTPClient (keep-alive, TLS, a connection pool
/// per target), signed like the server API, and never follow a redirect. A call that does not answer within
/// the app's `timeoutMillis`, answers anything but 200 with a verdict, answers more than `maxAnswerBytes`, or
/// goes to a target the node does not call (`WebhookTargetRule`, checked against the addresses the name
/// resolves to) gets the app's `onFailure`.
final class WebhookCaller: PreSendGate, @unchecked Sendable {
    struct App {
        var settings: WebhookSettings
        var secret: String
        /// The settings' url, parsed once (nil: malformed; every call then fails as such).
        var target: WebhookTarget?
    }

    let client: HTTPClient
    private let rule: WebhookTargetRule
    private let legacyRoomsApp: String?
    let logger: Logger
    let apps = NIOLockedValueBox<[String: App]>([:])
    /// SPEC W2: the after-event kinds each app wants by its rooms' namespace, and the app's key by namespace;
    /// nil until the first `update`.
    /// Opens the apps' sealed secrets.
    private let secrets: MetaSecrets
    let copySubscriptions = NIOLockedValueBox<(kinds: [String: WebhookCopyKinds], apps: [String: String])?>(nil)
    let copyFailures: RateLimitedWarning
    let copyDrops: RateLimitedWarning
    /// Whether any app checks messages before they are stored: asked on every message, so a cluster whose apps
    /// check none pays one atomic load per message (an A/B through the client path showed the lock's cost).
    private let anyChecks = Atomic<Bool>(false)
    private let failures: RateLimitedWarning
    /// W5: what the calls did, per app (`/metrics`, `/status`).
    let figures: WebhookFigures
    static let maxAnswerBytes = 64 << 10
    static let connectionsPerTarget = 64

    init(group: EventLoopGroup, rule: WebhookTargetRule, legacyRoomsApp: String?, secrets: MetaSecrets, logger: Logger,
         metrics: (any MetricsFactory)? = nil) {
        self.secrets = secrets
        figures = WebhookFigures(factory: metrics)
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        // Up to 64 connections per app server (AsyncHTTPClient's default is 8): a leader's checks wait for the
        // app server side by side, and over 8 connections an app server 50 ms away answers at most 160 a second.
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: Self.connectionsPerTarget)
        client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
        self.rule = rule
        self.legacyRoomsApp = legacyRoomsApp
        self.logger = logger
        failures = RateLimitedWarning(logger: logger, message: "a pre-send callback failed; the app's onFailure applied")
        copyFailures = RateLimitedWarning(logger: logger, message: "an after-event callback failed; it is retried")
        copyDrops = RateLimitedWarning(logger: logger, message: "after-event callbacks dropped unsent")
    }

    func shutdown() async { try? await client.shutdown() }

    /// Takes the apps' webhooks and secrets from the meta state.
    func update(from state: MetaState) {
        var out: [String: App] = [:]
        for (key, settings) in state.webhooks where settings.enabled {
            guard let app = state.apps[key], let secret = secrets.open(app.sealedSecret, appKey: key) else { continue }
            out[key] = App(settings: settings, secret: secret, target: WebhookTarget(url: settings.url))
        }
        var kinds: [String: WebhookCopyKinds] = [:]
        var keys: [String: String] = [:]
        for (key, app) in out {
            let wanted = WebhookCopyKinds(app.settings.events)
            guard !wanted.isEmpty else { continue }
            let namespace = AppScope.namespace(ofApp: key, legacyApp: legacyRoomsApp)
            kinds[namespace] = wanted
            keys[namespace] = key
        }
        copySubscriptions.withLockedValue { $0 = (kinds, keys) }
        anyChecks.store(out.values.contains { $0.settings.preSendRooms != .none || $0.settings.checksImBeforeSending },
                        ordering: .releasing)
        let before = apps.withLockedValue { all in defer { all = out }; return all.mapValues(\.settings) }
        if before != out.mapValues(\.settings) {
            logger.info("webhooks", metadata: ["apps": "\(out.keys.sorted())", "of": "\(state.webhooks.count)"])
        }
    }

    /// The app whose room `roomId` (a scoped id) is, and that app's settings if it checks this room.
    private func app(ofRoom roomId: String) -> (key: String, app: App)? {
        guard anyChecks.load(ordering: .acquiring) else { return nil }
        let namespace = AppScope.namespace(of: roomId)
        let key = namespace.isEmpty ? (legacyRoomsApp ?? "") : namespace
        guard let app = apps.withLockedValue({ $0[key] }),
              app.settings.checksBeforeSending(roomId: AppScope.local(roomId)) else { return nil }
        return (key, app)
    }

    func checkMillis(roomId: String) -> Int? { app(ofRoom: roomId)?.app.settings.timeoutMillis }

    /// The app of `account` (app-scoped) if it checks one-to-one and team messages (`preSend.im`).
    private func app(ofAccount account: String) -> (key: String, app: App)? {
        guard anyChecks.load(ordering: .acquiring) else { return nil }
        let key = AppScope.namespace(of: account)
        guard let app = apps.withLockedValue({ $0[key] }), app.settings.checksImBeforeSending else { return nil }
        return (key, app)
    }

    func imCheckMillis(account: String) -> Int? { app(ofAccount: account)?.app.settings.timeoutMillis }

    func verdict(on message: SendMessage, sender: SessionIdentity, eventLoop: EventLoop) -> EventLoopFuture<PreSendVerdict>? {
        guard let (key, app) = app(ofRoom: message.roomId) else { return nil }
        let question = Question(appKey: key, roomId: AppScope.local(message.roomId), from: AppScope.local(sender.userId),
                                clientMessageId: message.clientMessageId, msgType: Int(message.type.rawValue),
                                body: message.body, ext: message.ext, time: Int64(Date().timeIntervalSince1970 * 1000))
        return check(app, key: key, question, eventLoop: eventLoop)
    }

    func verdict(onIm message: ImPreSend, eventLoop: EventLoop) -> EventLoopFuture<PreSendVerdict>? {
        guard let (key, app) = app(ofAccount: message.from) else { return nil }
        var question = ImQuestion(appKey: key, conversation: "p2p", from: AppScope.local(message.from),
                                  clientMessageId: message.clientMessageId, msgType: message.type, body: message.body,
                                  ext: message.ext, time: Int64(Date().timeIntervalSince1970 * 1000))
        switch message.conversation {
        case .p2p(let to): question.to = AppScope.local(to)
        case .team(let teamId): question.conversation = "team"; question.teamId = AppScope.local(teamId)
        }
        return check(app, key: key, question, eventLoop: eventLoop)
    }

    /// Posts `question` to the app server: its verdict, or — on an error, a bad answer or no answer within the
    /// app's timeout — the app's `onFailure` (logged rate-limited and counted). Completes on `eventLoop`.
    private func check(_ app: App, key: String, _ question: some Encodable & Sendable,
                       eventLoop: EventLoop) -> EventLoopFuture<PreSendVerdict> {
        let promise = eventLoop.makePromise(of: PreSendVerdict.self)
        let settings = app.settings
        let settled = NIOLockedValueBox(false)
        let failures = self.failures
        let figures = self.figures
        let began = ContinuousClock.now
        // The first of the answer and the timeout settles the verdict.
        @Sendable func settle(_ verdict: PreSendVerdict?, failure why: String = "") {
            guard settled.withLockedValue({ done in defer { done = true }; return !done }) else { return }
            let took = began.duration(to: .now)
            switch verdict {
            case .allow?: figures.record(app: key, .allowed, took: took)
            case .reject?: figures.record(app: key, .rejected, took: took)
            case .replace?: figures.record(app: key, .replaced, took: took)
            case .unchecked?, nil: figures.record(app: key, .failed, took: took, failure: why)
            }
            if let verdict { return promise.succeed(verdict) }
            failures.happened(["app": "\(key)", "why": "\(why)"])
            promise.succeed(settings.onFailure == .allow ? .allow : .unchecked(why: why))
        }
        let call = NIOLockedValueBox<HTTPClient.Task<HTTPClient.Response>?>(nil)
        // Through AsyncHTTPClient's futures, the answer handed to the caller's loop: no task and no hop through
        // the concurrency pool per call. Only a name not resolved lately is resolved off the loop first
        // (`target`).
        target(app.target, on: eventLoop).flatMap { target -> EventLoopFuture<HTTPClient.Response> in
            do {
                let request = try Self.request(target, app: app, key: key, question)
                let task = self.client.execute(request: request,
                                               delegate: ResponseAccumulator(request: request, maxBodySize: Self.maxAnswerBytes),
                                               eventLoop: .indifferent,
                                               deadline: .now() + .milliseconds(Int64(settings.timeoutMillis)))
                call.withLockedValue { $0 = task }
                return task.futureResult.hop(to: eventLoop)
            } catch {
                return eventLoop.makeFailedFuture(error)
            }
        }.whenComplete { result in
            do {
                settle(try Self.verdict(from: result.get()))
            } catch {
                settle(nil, failure: "\(error)")
            }
        }
        // The app's timeout bounds the whole call (connect, answer and body); the call is cancelled after it.
        let timeout = eventLoop.scheduleTask(in: .milliseconds(Int64(settings.timeoutMillis))) {
            call.withLockedValue { $0?.cancel() }
            settle(nil, failure: "no answer within \(settings.timeoutMillis) ms")
        }
        promise.futureResult.whenComplete { _ in timeout.cancel() }
        return promise.futureResult
    }

    /// Names whose addresses the rule allowed lately, and until when (a name is resolved again after
    /// `resolvedFor`, so a changed DNS answer is judged again within seconds).
    private let resolved = NIOLockedValueBox<[String: NIODeadline]>([:])
    static let resolvedFor = TimeAmount.seconds(5)

    /// The app's target, its addresses judged by the node's rule: at once for an address or a name judged
    /// lately, otherwise after resolving the name off the loop (`getaddrinfo` blocks).
    func target(_ target: WebhookTarget?, on eventLoop: EventLoop) -> EventLoopFuture<WebhookTarget> {
        guard let target else {
            return eventLoop.makeFailedFuture(CallError.refusedTarget("a malformed url"))
        }
        if let refusal = rule.refusal(target) { return eventLoop.makeFailedFuture(CallError.refusedTarget(refusal)) }
        if IPAddress(parsing: target.host) != nil { return eventLoop.makeSucceededFuture(target) }
        if let until = resolved.withLockedValue({ $0[target.host] }), until > .now() {
            return eventLoop.makeSucceededFuture(target)
        }
        let rule = self.rule
        let resolved = self.resolved
        return eventLoop.makeFutureWithTask {
            try Self.checkAddresses(of: target, rule: rule)
            resolved.withLockedValue { all in
                if all.count > 1_000 { all = [:] }
                all[target.host] = .now() + Self.resolvedFor
            }
            return target
        }
    }

    private struct Question: Encodable, Sendable {
        var type = "preSend"
        var appKey: String
        var roomId: String
        var from: String
        var clientMessageId: String
        var msgType: Int
        var body: String
        var ext: String
        var time: Int64
    }

    /// A one-to-one (`to`) or team (`teamId`) message, shown before it is stored (`preSend.im`).
    private struct ImQuestion: Encodable, Sendable {
        var type = "preSendIm"
        var appKey: String
        var conversation: String
        var to: String?
        var teamId: String?
        var from: String
        var clientMessageId: String
        var msgType: String
        var body: String
        var ext: String
        var time: Int64

        init(appKey: String, conversation: String, from: String, clientMessageId: String, msgType: String,
             body: String, ext: String, time: Int64) {
            self.appKey = appKey
            self.conversation = conversation
            self.from = from
            self.clientMessageId = clientMessageId
            self.msgType = msgType
            self.body = body
            self.ext = ext
            self.time = time
        }
    }

    private struct Answer: Decodable {
        var action: String
        var code: Int?
        var reason: String?
        var body: String?
        var ext: String?
    }

    enum CallError: Error, CustomStringConvertible {
        case refusedTarget(String)
        case status(UInt)
        case malformed(String)

        var description: String {
            switch self {
            case .refusedTarget(let why): why
            case .status(let code): "the app server answered HTTP \(code)"
            case .malformed(let why): "the app server's answer is not a verdict (\(why))"
            }
        }
    }

    /// The signed POST of `question` to the app's target.
    static func request(_ target: WebhookTarget, app: App, key: String, _ question: some Encodable) throws
        -> HTTPClient.Request {
        let body = try JSONEncoder().encode(question)
        var headers = HTTPHeaders([("Content-Type", "application/json")])
        for (name, value) in RequestSignature.signedHeaders(appKey: key, secret: app.secret, nonce: UUID().uuidString,
                                                            curTime: Int64(Date().timeIntervalSince1970), path: target.path,
                                                            body: body) {
            headers.add(name: name, value: value)
        }
        return try HTTPClient.Request(url: app.settings.url, method: .POST, headers: headers, body: .bytes(body))
    }

    /// The verdict an app server's answer holds.
    private static func verdict(from response: HTTPClient.Response) throws -> PreSendVerdict {
        guard response.status == .ok else { throw CallError.status(response.status.code) }
        guard let bytes = response.body, let answer = try? JSONDecoder().decode(Answer.self, from: Data(buffer: bytes)) else {
            throw CallError.malformed("not JSON with an action")
        }
        switch answer.action {
        case "allow": return .allow
        case "reject":
            let reason = String((answer.reason ?? "").prefix(256))
            return .reject(appCode: answer.code ?? 0, reason: reason)
        case "replace":
            guard answer.body != nil || answer.ext != nil else { throw CallError.malformed("a replace with neither body nor ext") }
            return .replace(body: answer.body, ext: answer.ext)
        default: throw CallError.malformed("unknown action \(answer.action.prefix(32))")
        }
    }

    /// Refuses a target whose name resolves to an address the rule does not allow (or that does not resolve).
    static func checkAddresses(of target: WebhookTarget, rule: WebhookTargetRule) throws {
        if let refusal = rule.refusal(target) { throw CallError.refusedTarget(refusal) }
        if IPAddress(parsing: target.host) != nil { return }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(target.host, nil, &hints, &list) == 0, let first = list else {
            throw CallError.refusedTarget("\(target.host) does not resolve")
        }
        defer { freeaddrinfo(first) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let e = entry {
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(e.pointee.ai_addr, e.pointee.ai_addrlen, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0,
               let address = IPAddress(parsing: String(cString: host)), let refusal = rule.refusal(address, named: target.host) {
                throw CallError.refusedTarget(refusal)
            }
            entry = e.pointee.ai_next
        }
    }
}
