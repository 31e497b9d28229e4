import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import ParleyClient
import ServiceLifecycle

/// A protocol test peer: a tiny WebSocket server in the test target that speaks just enough of
/// docs/protocol.md (hello, ping, enter with lastSeq replay, exit, sendMessage, fetchRoomInfo, kick) for the
/// SDK's connection, reconnect and resume logic to be driven deterministically. It is not Parley and
/// checks none of the room rules; the end-to-end tests against real nodes live in ParleyNodeTests.
///
/// Knobs a test turns: drop every connection of a room, refuse the next enters with a code, replay from
/// before the client's lastSeq (to prove the client drops duplicates), keep quiet on an op (timeouts), and a
/// heartbeat interval for the hello answer.
actor ProtocolTestPeer {
    struct Connection {
        let outbound: WebSocketOutboundWriter
        var rooms: Set<String> = []
        var account = ""
    }

    /// An event the peer keeps per room, as history a resume replays from.
    struct Stored { let seq: Int64; let frame: String }

    private(set) var port = 0
    private var service: ServiceGroup?
    private var runner: Task<Void, Never>?

    private var connections: [Int: Connection] = [:]
    private var lastConnection = 0
    private var seqs: [String: Int64] = [:]
    private var history: [String: [Stored]] = [:]

    // Knobs.
    var heartbeatMs = 25_000
    /// The code the next enters are refused with (nil: accepted).
    var refuseEnters: ChatroomError?
    /// Replay this many already-seen events again on resume (the client must drop them).
    var replayOverlap: Int64 = 0
    /// History older than this seq is "gone": a resume from before it gets gapTooOld.
    var historyStartsAt: Int64 = 1
    /// Ops the peer never answers.
    var silentOps: Set<String> = []
    /// Ops the peer refuses with this error (416 with retryAfterMs: the connection's request budget).
    var refusedOps: [String: ChatroomError] = [:]
    /// A resume from before `historyStartsAt` still replays what history holds, as Parley's edge does (the
    /// answer names `replayFromSeq`); off, it replays nothing.
    var replayNewestOnGap = false

    // What happened, for assertions.
    private(set) var enters: [(roomId: String, lastSeq: Int64?)] = []
    private(set) var pings = 0
    private(set) var received: [JSONValue] = []

    var address: String { "127.0.0.1:\(port)" }

    func set(heartbeatMs: Int? = nil, refuseEnters: ChatroomError?? = nil, replayOverlap: Int64? = nil,
             historyStartsAt: Int64? = nil, silentOps: Set<String>? = nil, replayNewestOnGap: Bool? = nil,
             refusedOps: [String: ChatroomError]? = nil) {
        if let refusedOps { self.refusedOps = refusedOps }
        if let replayNewestOnGap { self.replayNewestOnGap = replayNewestOnGap }
        if let heartbeatMs { self.heartbeatMs = heartbeatMs }
        if let refuseEnters { self.refuseEnters = refuseEnters }
        if let replayOverlap { self.replayOverlap = replayOverlap }
        if let historyStartsAt { self.historyStartsAt = historyStartsAt }
        if let silentOps { self.silentOps = silentOps }
    }

    // MARK: Lifecycle

    func start() async throws {
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.ws("/ws", onUpgrade: { [self] inbound, outbound, _ in
            let id = await self.connected(outbound)
            do {
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { await self.handle(text, from: id) }
                }
            } catch {}
            await self.disconnected(id)
        })
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "protocol-test-peer")
        logger.logLevel = .error
        let app = Application(
            router: Router(),
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                portSink.yield(channel.localAddress?.port ?? 0)
                portSink.finish()
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        service = group
        runner = Task { try? await group.run() }
        for await p in ports { port = p }
    }

    func stop() async {
        await service?.triggerGracefulShutdown()
        await runner?.value
    }

    // MARK: Commands from tests

    /// Closes every connection in `roomId` from the server side, as a dying edge would.
    func drop(roomId: String) async {
        for (id, c) in connections where c.rooms.contains(roomId) {
            connections[id] = nil
            try? await c.outbound.close(.unexpectedServerError, reason: "dropped by test")
        }
    }

    /// A message from someone else, stored and pushed to whoever is in the room (nobody while dropped).
    @discardableResult
    func inject(roomId: String, body: String, from: String = "bob") async -> Int64 {
        await publish(roomId: roomId, event: "message") { seq in
            self.message(seq: seq, from: from, body: body, clientMessageId: "")
        }
    }

    /// Pushes a raw event frame to the room's connections without storing it.
    func push(roomId: String, frame: String) async {
        for c in connections.values where c.rooms.contains(roomId) { try? await c.outbound.write(.text(frame)) }
    }

    var openConnections: Int { connections.count }

    // MARK: Protocol

    private func connected(_ outbound: WebSocketOutboundWriter) -> Int {
        lastConnection += 1
        connections[lastConnection] = Connection(outbound: outbound)
        return lastConnection
    }

    private func disconnected(_ id: Int) { connections[id] = nil }

    private func handle(_ text: String, from id: Int) async {
        guard let request = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
              let rid = request["id"]?.intValue, let op = request["op"]?.stringValue else {
            await answer(id, 0, error: ChatroomError(code: 4000, message: "malformed frame"))
            return
        }
        received.append(request)
        if silentOps.contains(op) { return }
        if let refusal = refusedOps[op] {
            if op == "ping" { pings += 1 }
            await answer(id, rid, error: refusal)
            return
        }
        let roomId = request["roomId"]?.stringValue ?? ""
        switch op {
        case "hello":
            await answer(id, rid, data: .object([
                "version": 1, "heartbeatMs": .int(Int64(heartbeatMs)), "idleTimeoutMs": .int(Int64(3 * heartbeatMs)),
                "maxFrameBytes": 65536, "edge": "peer", "connection": .string("peer#\(id)"),
            ]))
        case "ping":
            pings += 1
            await answer(id, rid, data: .object(["time": .int(now())]))
        case "enter":
            await enter(request, rid: rid, roomId: roomId, connection: id)
        case "exit":
            connections[id]?.rooms.remove(roomId)
            await answer(id, rid, data: .object([:]))
        case "sendMessage":
            let account = connections[id]?.account ?? ""
            let body = request["body"]?.stringValue ?? ""
            let cmid = request["clientMessageId"]?.stringValue ?? ""
            // The answer goes first, then the event: the order an edge gives the sender.
            let seq = nextSeq(roomId)
            await answer(id, rid, data: .object(["seq": .int(seq), "time": .int(now()), "serverId": .int(seq + 1000)]))
            await store(roomId: roomId, seq: seq, frame: eventFrame("message", roomId, seq, message(seq: seq, from: account, body: body, clientMessageId: cmid)))
        case "fetchRoomInfo":
            await answer(id, rid, data: .object(["room": room(roomId)]))
        case "kick":
            let target = request["userId"]?.stringValue ?? ""
            await answer(id, rid, data: .object([:]))
            for (cid, c) in connections where c.rooms.contains(roomId) && c.account == target {
                connections[cid]?.rooms.remove(roomId)
                let kicked = eventFrame("kicked", roomId, 0, .object(["reason": 2, "ext": request["notifyExt"] ?? ""]))
                try? await c.outbound.write(.text(kicked))
            }
        default:
            await answer(id, rid, error: ChatroomError(code: 4004, message: "unknown op \(op)"))
        }
    }

    private func enter(_ request: JSONValue, rid: Int64, roomId: String, connection id: Int) async {
        let lastSeq = request["lastSeq"]?.intValue
        enters.append((roomId, lastSeq))
        if let refusal = refuseEnters {
            await answer(id, rid, error: refusal)
            return
        }
        let auth = request["auth"]
        let account = auth?["account"]?.stringValue ?? "anon-\(id)"
        if auth?["token"]?.stringValue == "bad" {
            await answer(id, rid, error: ChatroomError(code: 4010, message: "bad token"))
            try? await connections[id]?.outbound.close(.init(codeNumber: 4401), reason: "bad token")
            return
        }
        connections[id]?.rooms.insert(roomId)
        connections[id]?.account = account
        let resumed = lastSeq != nil
        let gapTooOld = lastSeq.map { $0 + 1 < historyStartsAt } ?? false
        var fields: [String: JSONValue] = [
            "room": room(roomId),
            "member": member(account),
            "authMode": auth?["mode"] ?? "independent",
            "account": .string(account),
            "resumed": .bool(resumed && !gapTooOld),
            "gapTooOld": .bool(gapTooOld),
        ]
        if gapTooOld && replayNewestOnGap { fields["replayFromSeq"] = .int(historyStartsAt) }
        await answer(id, rid, data: .object(fields))
        // X2: replay what came after lastSeq before anything live (here deliberately from a little earlier).
        if let lastSeq, !gapTooOld || replayNewestOnGap, let c = connections[id] {
            let from = gapTooOld ? historyStartsAt : lastSeq + 1 - replayOverlap
            for item in history[roomId, default: []] where item.seq >= from {
                try? await c.outbound.write(.text(item.frame))
            }
        }
    }

    // MARK: Frames

    private func publish(roomId: String, event: String, _ data: (Int64) -> JSONValue) async -> Int64 {
        let seq = nextSeq(roomId)
        await store(roomId: roomId, seq: seq, frame: eventFrame(event, roomId, seq, data(seq)))
        return seq
    }

    private func store(roomId: String, seq: Int64, frame: String) async {
        history[roomId, default: []].append(Stored(seq: seq, frame: frame))
        await push(roomId: roomId, frame: frame)
    }

    private func nextSeq(_ roomId: String) -> Int64 {
        let seq = (seqs[roomId] ?? 0) + 1
        seqs[roomId] = seq
        return seq
    }

    private func answer(_ connection: Int, _ rid: Int64, data: JSONValue) async {
        await write(connection, .object(["id": .int(rid), "ok": true, "data": data]))
    }

    private func answer(_ connection: Int, _ rid: Int64, error: ChatroomError) async {
        await write(connection, .object(["id": .int(rid), "ok": false,
                                         "error": .object(["code": .int(Int64(error.code)), "message": .string(error.message)])]))
    }

    private func write(_ connection: Int, _ value: JSONValue) async {
        guard let c = connections[connection] else { return }
        try? await c.outbound.write(.text(Self.text(value)))
    }

    private func eventFrame(_ event: String, _ roomId: String, _ seq: Int64, _ data: JSONValue) -> String {
        Self.text(.object(["event": .string(event), "roomId": .string(roomId), "seq": .int(seq), "data": data]))
    }

    static func text(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }

    private func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    private func message(seq: Int64, from: String, body: String, clientMessageId: String) -> JSONValue {
        .object([
            "seq": .int(seq), "serverId": .int(seq + 1000), "time": .int(now()), "from": .string(from),
            "fromNickname": .string(from), "fromAvatar": "", "fromExt": "", "type": "text",
            "clientMessageId": .string(clientMessageId), "body": .string(body), "ext": "",
        ])
    }

    private func room(_ roomId: String) -> JSONValue {
        .object([
            "roomId": .string(roomId), "name": "peer room", "announcement": "", "creator": "owner", "ext": "",
            "broadcastUrl": "", "queueLevel": 0, "isMuted": false, "isOpen": true,
            "onlineUserCount": .int(Int64(connections.values.filter { $0.rooms.contains(roomId) }.count)),
            "seq": .int(seqs[roomId] ?? 0),
        ])
    }

    private func member(_ account: String) -> JSONValue {
        .object([
            "userId": .string(account), "nickname": .string(account), "avatar": "", "ext": "", "type": "visitor",
            "isMuted": false, "isTempMuted": false, "tempMuteDuration": 0, "isInBlackList": false, "isOnline": true,
            "enterTime": .int(now()), "pageKey": 1,
        ])
    }
}
