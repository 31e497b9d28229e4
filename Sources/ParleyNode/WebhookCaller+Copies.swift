import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ParleyCluster
import ParleyPlacement
import ParleyRooms
import ParleyShardState

/// SPEC W2 on a node: posts a shard leader's after-event copies to their app server (docs/webhooks.md,
/// "After-event callbacks"): one signed POST of `{"type": "events", "events": [...]}`, oldest first, taken once
/// the app server answers 2xx. Ids are the app's own (the namespace stripped).
extension WebhookCaller: WebhookCopyPoster {
    /// How long a call may take before it counts as failed (and is made again after the back-off).
    static let copyTimeout = TimeAmount.seconds(10)

    func copyKinds() -> [String: WebhookCopyKinds]? {
        copySubscriptions.withLockedValue { $0?.kinds }
    }

    func readSettings(from state: MetaState) { update(from: state) }

    /// The app key of a namespace (the legacy rooms' app for "").
    private func appKey(ofNamespace namespace: String) -> String? {
        copySubscriptions.withLockedValue { $0?.apps[namespace] }
    }

    func post(_ copies: [WebhookCopy], namespace: String, shard: ShardID, eventLoop: EventLoop) -> EventLoopFuture<Void> {
        guard let key = appKey(ofNamespace: namespace), let app = apps.withLockedValue({ $0[key] }) else {
            return eventLoop.makeFailedFuture(CallError.refusedTarget("the app has no webhooks on"))
        }
        let figures = self.figures
        let began = ContinuousClock.now
        // Rendered, signed and sent from one of the client's loops: the caller is a Raft loop, which the JSON
        // of a hundred events would hold up (measured: the one-writer p99 rose by 0.6 ms with it there).
        let worker = client.eventLoopGroup.next()
        return worker.flatSubmit { () -> EventLoopFuture<WebhookTarget> in self.target(app.target, on: worker) }
            .flatMap { target -> EventLoopFuture<UInt> in
                do {
                    let batch = CopyBatch(appKey: key, events: copies.map { CopyEvent($0, shard: shard) })
                    let request = try Self.request(target, app: app, key: key, batch)
                    return self.client.execute(request: request, delegate: StatusOnly(), eventLoop: .delegate(on: worker),
                                               deadline: .now() + Self.copyTimeout).futureResult
                } catch {
                    return worker.makeFailedFuture(error)
                }
            }
            .hop(to: eventLoop)
            .flatMapThrowing { status in
                guard (200..<300).contains(status) else { throw CallError.status(status) }
            }
            .always { result in
                let took = began.duration(to: .now)
                switch result {
                case .success:
                    figures.recordCopies(app: key, delivered: copies.count, took: took)
                case .failure(let error):
                    figures.recordCopies(app: key, delivered: 0, took: took, failure: "\(error)")
                    self.copyFailures.happened(["app": "\(key)", "why": "\(error)", "events": "\(copies.count)"])
                }
            }
    }

    func dropped(namespace: String, count: Int, why: String) {
        let key = appKey(ofNamespace: namespace) ?? namespace
        figures.recordDropped(app: key, count: count)
        copyDrops.happened(["app": "\(key)", "events": "\(count)", "why": "\(why)"])
    }

    func backlog(namespace: String, byShard: [ShardID: (pending: Int, oldestMillis: Int64)]) {
        figures.recordBacklog(app: appKey(ofNamespace: namespace) ?? namespace, byShard: byShard)
    }
}

/// An after-event call needs only the answer's status: its body is read and dropped as it comes, however long
/// (within the call's deadline), so an app server that answers 2xx with anything has taken the events.
private final class StatusOnly: HTTPClientResponseDelegate {
    typealias Response = UInt
    private var status: UInt = 0

    func didReceiveHead(task: HTTPClient.Task<UInt>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = head.status.code
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<UInt>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<UInt>) throws -> UInt { status }
}

/// One call's body.
private struct CopyBatch: Encodable, Sendable {
    var type = "events"
    var appKey: String
    var events: [CopyEvent]
}

/// One after-event copy as the app server reads it.
private struct CopyEvent: Encodable, Sendable {
    /// Unique for ever in the cluster: the shard, the shard's command index and the event's place in it.
    var id: String
    var event: String
    var roomId: String?
    /// A one-to-one message's receiver, or a team message's team.
    var to: String?
    var teamId: String?
    var time: Int64
    /// The room's sequence number (messages and notifications the room was told of), or the conversation's: the
    /// receiver's log for a one-to-one message, the team's log for a team message.
    var seq: UInt64?
    var userId: String?
    var reason: String?
    var message: Message?
    var notification: Notification?

    struct Message: Encodable, Sendable {
        var serverId: UInt64?
        var from: String
        var nickname: String?
        /// A room message's type code (N1), or an IM message's type name.
        var msgType: MessageTypeName
        var clientMessageId: String
        var body: String
        var ext: String
    }

    struct Notification: Encodable, Sendable {
        /// N3's code (301 … 320).
        var type: Int
        var from: String
        var targets: [String]
        var notifyExt: String
        /// Whether the room was told of it (false: the command asked for no notification).
        var announced: Bool
        var muteSeconds: UInt64?
        var queueChange: Int?
        var queue: [QueueItem]?
    }

    enum MessageTypeName: Encodable, Sendable {
        case code(Int)
        case name(String)

        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .code(let n): try c.encode(n)
            case .name(let s): try c.encode(s)
            }
        }
    }

    struct QueueItem: Encodable, Sendable {
        var key: String
        var value: String
    }

    init(_ copy: WebhookCopy, shard: ShardID) {
        id = "\(shard).\(copy.position.commandIndex).\(copy.position.ordinal)"
        time = copy.time
        // The shard keeps only what an app can ask for, so every copy has its event's name.
        event = WebhookSettings.Event(copy.event)?.rawValue ?? "unknown"
        let activity: RoomActivity
        switch copy.event {
        case .room(let a):
            activity = a
        case .im(let m):
            to = m.to.map(AppScope.local)
            teamId = m.teamId.map(AppScope.local)
            seq = m.seq
            message = Message(from: AppScope.local(m.from), msgType: .name(m.type), clientMessageId: m.clientMessageId,
                              body: m.body, ext: m.ext)
            return
        }
        roomId = AppScope.local(activity.roomId)
        switch activity {
        case .message(_, let m):
            seq = m.seq
            message = Message(serverId: m.serverId, from: AppScope.local(m.senderId), nickname: m.senderNickname,
                              msgType: .code(Int(m.type.rawValue)), clientMessageId: m.clientMessageId, body: m.body, ext: m.ext)
        case .entered(_, let user):
            userId = AppScope.local(user)
        case .left(_, let user, let why):
            userId = AppScope.local(user)
            reason = why.name
        case .created(_, let creator):
            userId = AppScope.local(creator)
        case .updated:
            break
        case .notification(_, let n):
            seq = n.seq == 0 ? nil : n.seq
            var out = Notification(type: Int(n.type.rawValue), from: AppScope.local(n.source.userId),
                                   targets: n.targets.map { AppScope.local($0.userId) }, notifyExt: n.notifyExt,
                                   announced: n.seq != 0)
            switch n.ext {
            case .none: break
            case .muteDuration(let seconds): out.muteSeconds = seconds
            case .queueChange(let change, let key, let value):
                out.queueChange = Int(change.rawValue)
                out.queue = [QueueItem(key: key, value: value)]
            case .queueBatch(let change, let items):
                out.queueChange = Int(change.rawValue)
                out.queue = items.map { QueueItem(key: $0.key, value: $0.value) }
            }
            notification = out
        }
    }
}
