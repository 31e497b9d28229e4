import Foundation
import Logging

/// The chat room client (the seed's NIMChatroomManager). One WebSocket per entered room, as in the seed
/// ("different chat rooms correspond to different connections"): each room has its own address list, so
/// rooms on different edges never share a connection's fate.
///
/// Every call waits for the server's answer and throws `ChatroomError`. Everything else arrives on `events`
/// (one consumer; events are buffered until read).
public actor ChatroomClient: RequestChannel {
    public struct Configuration: Sendable {
        /// The app server's room address lookup (E6, requestAddr): `host:port` edges, best first.
        public var addressLookup: @Sendable (_ roomId: String) async throws -> [String]
        /// How long a request waits for its answer before failing with 408.
        public var requestTimeout: Duration = .seconds(10)
        /// How long opening a connection to an edge (TCP and the WebSocket upgrade) may take before the next
        /// address is tried (a stopped process may still accept TCP and never answer).
        public var connectTimeout: Duration = .seconds(10)
        /// Wait before re-enter attempt n is n × this.
        public var reconnectDelay: Duration = .milliseconds(500)
        /// Sent in `hello`.
        public var clientName = "parley-swift/0.1"
        /// SPEC T1: edges serve TLS (`wss://`), trusted as this says; nil dials `ws://` (see `EdgeTLS`).
        public var tls: EdgeTLS?
        public var logger = Logger(label: "parley.client")

        public init(addressLookup: @escaping @Sendable (_ roomId: String) async throws -> [String]) {
            self.addressLookup = addressLookup
        }

        /// The same addresses for every room (tests, a single-node setup, non-independent mode with
        /// known edges).
        public static func addresses(_ addresses: [String]) -> Configuration {
            Configuration { _ in addresses }
        }
    }

    /// What the server announced in its `hello` answer.
    struct Hello: Decodable, Sendable {
        var version: Int
        var heartbeatMs: Int
        var idleTimeoutMs: Int
        var maxFrameBytes: Int
        var edge: String
        var connection: String
    }

    private enum Phase { case entering, entered, reconnecting }

    private struct Session {
        let epoch: Int
        var request: ChatroomEnterRequest
        var phase: Phase = .entering
        var link: WebSocketLink?
        var heartbeat: Task<Void, Never>?
        var reconnect: Task<Void, Never>?
        /// C5: a move to another edge under way (the old link stays until the new one has entered).
        var handOver: Task<Void, Never>?
        var ledger = ResumeLedger()
        /// Events that arrived on the link after the enter's answer but before the entering task took that
        /// answer: held so the ledger records the answer (a `gapTooOld` range) before the events behind it.
        var early: [(seq: Int64, event: ChatroomEvent)] = []
    }

    public static let protocolVersions = [1]
    /// Inbound messages larger than this are refused by the library; the server's own limit is 64 KiB.
    static let maxMessageBytes = 1 << 20

    public nonisolated let events: AsyncStream<ChatroomEvent>
    private let sink: AsyncStream<ChatroomEvent>.Continuation
    let configuration: Configuration
    private var rooms: [String: Session] = [:]
    /// Which room each open link serves (a link serves exactly one room).
    private var links: [Int: String] = [:]
    var pending = PendingRequests()
    var requestTimeout: Duration { configuration.requestTimeout }
    private var lastLinkId = 0
    private var lastEpoch = 0

    public init(configuration: Configuration) {
        self.configuration = configuration
        let (stream, continuation) = AsyncStream.makeStream(of: ChatroomEvent.self)
        events = stream
        sink = continuation
    }

    /// The rooms this client is in or re-entering.
    public var enteredRoomIds: [String] { rooms.keys.sorted() }

    /// Where a room would resume (tests and diagnostics).
    public func ledger(of roomId: String) -> ResumeLedger? { rooms[roomId]?.ledger }

    // MARK: Entering and leaving

    /// Enters a room (E1, E4, E5): looks its addresses up and tries them in order (E6). States go
    /// Entering → EnterOK or EnterFailed on `events`.
    @discardableResult
    public func enterChatroom(_ request: ChatroomEnterRequest) async throws -> ChatroomEnterResult {
        let roomId = request.roomId
        guard rooms[roomId] == nil else {
            throw ChatroomError(code: ChatroomError.alreadyInRoom, message: "already in room \(roomId)")
        }
        lastEpoch += 1
        let epoch = lastEpoch
        rooms[roomId] = Session(epoch: epoch, request: request)
        sink.yield(.connectionState(roomId: roomId, .entering))
        do {
            let result = try await connectAndEnter(roomId, epoch: epoch, resume: nil)
            sink.yield(.connectionState(roomId: roomId, .enterOK))
            return result
        } catch {
            if rooms[roomId]?.epoch == epoch { teardown(roomId) }
            sink.yield(.connectionState(roomId: roomId, .enterFailed))
            throw error
        }
    }

    /// Leaves a room (E10). The room is left locally even when the server cannot be told (a closed
    /// connection ends the session server-side too); server refusals are still thrown.
    public func exitChatroom(_ roomId: String) async throws {
        guard let session = rooms[roomId] else { throw notEntered(roomId) }
        var refusal: ChatroomError?
        if session.phase == .entered, let link = session.link {
            do {
                _ = try await send(.exit(roomId: roomId), on: link)
            } catch let error as ChatroomError where error.code != ChatroomError.connectionLost && error.code != ChatroomError.timeout {
                refusal = error
            } catch {}
        }
        if rooms[roomId]?.epoch == session.epoch { teardown(roomId) }
        if let refusal { throw refusal }
    }

    /// Closes every connection without exiting rooms one by one (the server ends their sessions) and ends
    /// `events`.
    public func close() {
        for roomId in rooms.keys { teardown(roomId) }
        sink.finish()
    }

    // MARK: Requests

    /// Sends a room request on the room's connection and returns the raw answer frame.
    func call(_ request: ChatroomRequest, roomId: String) async throws -> Data {
        guard let session = rooms[roomId] else { throw notEntered(roomId) }
        guard session.phase == .entered, let link = session.link else {
            throw ChatroomError.lost("room \(roomId) is reconnecting")
        }
        return try await send(request, on: link)
    }

    func call<T: Decodable>(_ request: ChatroomRequest, roomId: String, answer: T.Type) async throws -> T {
        try decode(T.self, try await call(request, roomId: roomId))
    }

    private func decode<T: Decodable>(_: T.Type, _ frame: Data) throws -> T {
        do {
            return try InboundFrame.data(T.self, from: frame)
        } catch {
            throw ChatroomError(code: ChatroomError.badParameter, message: "undecodable answer: \(error)")
        }
    }

    private func notEntered(_ roomId: String) -> ChatroomError {
        ChatroomError(code: ChatroomError.notEntered, message: "not in room \(roomId)")
    }

    // MARK: Connecting

    /// Looks up the room's addresses and tries each: connect, hello, enter. The first success becomes the
    /// room's link. A refusal that another edge would repeat (bad token, blocklist, …) ends the search.
    private func connectAndEnter(_ roomId: String, epoch: Int, resume: Int64?, addresses given: [String]? = nil,
                                 replacing: String? = nil) async throws -> ChatroomEnterResult {
        let addresses: [String]
        do {
            if let given { addresses = given } else { addresses = try await configuration.addressLookup(roomId) }
        } catch {
            throw (error as? ChatroomError) ?? ChatroomError.lost("address lookup for \(roomId) failed: \(error)")
        }
        var lastError = ChatroomError.lost("no address for room \(roomId)")
        for address in addresses {
            guard let request = rooms[roomId]?.request, rooms[roomId]?.epoch == epoch else {
                throw ChatroomError.lost("room \(roomId) was left while entering")
            }
            lastLinkId += 1
            let linkId = lastLinkId
            let link: WebSocketLink
            do {
                link = try await WebSocketLink.open(
                    id: linkId, address: address, tls: configuration.tls, maxMessageBytes: Self.maxMessageBytes, timeout: configuration.connectTimeout,
                    logger: configuration.logger,
                    onText: { [weak self] text in await self?.receive(text, link: linkId) },
                    onClose: { [weak self] in await self?.linkClosed(linkId) })
            } catch {
                lastError = (error as? ChatroomError) ?? ChatroomError.lost("\(error)")
                continue
            }
            guard rooms[roomId]?.epoch == epoch else {
                await link.close()
                throw ChatroomError.lost("room \(roomId) was left while entering")
            }
            links[linkId] = roomId
            // Events of this link are routed to the room from now on: a resumed enter's replay follows its
            // answer immediately and may be handled before this task runs again.
            rooms[roomId]?.link = link
            do {
                let hello = try decode(Hello.self, try await send(.hello(versions: Self.protocolVersions, client: configuration.clientName), on: link))
                let answer = try decode(ChatroomEnterResult.self,
                                        try await send(.enter(request, lastSeq: resume, replacing: replacing), on: link))
                guard rooms[roomId]?.epoch == epoch else {
                    forget(link: linkId)
                    await link.close()
                    throw ChatroomError.lost("room \(roomId) was left while entering")
                }
                entered(roomId, answer: answer, reentered: resume != nil, heartbeat: .milliseconds(hello.heartbeatMs), link: link)
                return answer
            } catch let error as ChatroomError {
                forget(link: linkId)
                if rooms[roomId]?.link?.id == linkId {
                    rooms[roomId]?.link = nil
                    rooms[roomId]?.early = []
                }
                await link.close()
                lastError = error
                if !ReconnectPolicy.triesNextAddress(error) { throw error }
            }
        }
        throw lastError
    }

    private func entered(_ roomId: String, answer: ChatroomEnterResult, reentered: Bool, heartbeat: Duration, link: WebSocketLink) {
        guard var session = rooms[roomId] else { return }
        session.phase = .entered
        session.link = link
        session.reconnect = nil
        let lost = session.ledger.entered(roomSeq: answer.room.seq, resumed: answer.resumed, gapTooOld: answer.gapTooOld,
                                          replayFromSeq: answer.replayFromSeq, reentered: reentered)
        if let lost { session.ledger.skip(through: lost.upperBound) }
        session.heartbeat?.cancel()
        session.heartbeat = Task { [weak self] in await self?.beat(every: heartbeat, link: link) }
        let early = session.early
        session.early = []
        rooms[roomId] = session
        if let lost { sink.yield(.gap(roomId: roomId, fromSeq: lost.lowerBound, toSeq: lost.upperBound)) }
        for (seq, event) in early where rooms[roomId]?.link?.id == link.id {
            admit(event, seq: seq, roomId: roomId)
        }
    }

    /// Pings at the server's heartbeatMs; a ping that goes unanswered means the link is dead even if TCP has
    /// not noticed yet, so it is dropped and the room reconnects.
    private func beat(every interval: Duration, link: WebSocketLink) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            do {
                _ = try await send(.ping, on: link)
            } catch let error as ChatroomError where error.code != ChatroomError.timeout && error.code != ChatroomError.connectionLost {
                continue  // a refusal (416: the connection's request budget) came from a live edge
            } catch {
                configuration.logger.info("heartbeat to \(link.address) failed: \(error)")
                // Handled as a loss right away: a close handshake with a silent peer would only time out.
                linkClosed(link.id)
                Task {
                    await link.close()
                    link.abort()
                }
                return
            }
        }
    }

    // MARK: Inbound

    private func receive(_ text: String, link linkId: Int) {
        let frame: InboundFrame
        do {
            frame = try InboundFrame.decode(text)
        } catch {
            configuration.logger.warning("undecodable frame dropped: \(error)")
            return
        }
        switch frame {
        case .answer(let id, let result):
            pending.resolve(id, result)
        case .reconnect(let eventRoom, let addresses, let sessionId):
            guard let roomId = links[linkId], roomId == eventRoom else { return }
            handOver(roomId, to: addresses, replacing: sessionId, from: linkId)
        case .event(let eventRoom, let seq, let event):
            guard let roomId = links[linkId], roomId == eventRoom, var session = rooms[roomId],
                  session.link?.id == linkId, let event else { return }
            guard session.phase == .entered else {
                // The enter's answer resumes the entering task only after this frame: admitting a replayed
                // or live event first would move the ledger past a gapTooOld range and hide the gap.
                session.early.append((seq, event))
                rooms[roomId] = session
                return
            }
            admit(event, seq: seq, roomId: roomId)
        }
    }

    /// Dedupes (X2) one event of an entered room and hands it to the app.
    private func admit(_ event: ChatroomEvent, seq: Int64, roomId: String) {
        guard var session = rooms[roomId] else { return }
        // Dedupe (X2): a replayed or repeated room event at or below what the app has seen is dropped.
        guard session.ledger.admit(seq: seq) else { return }
        if case .gap(_, _, let toSeq) = event { session.ledger.skip(through: toSeq) }
        rooms[roomId] = session
        if case .kicked = event {
            // The session is over (E9) and must not come back by itself: forget the room before the
            // connection's close could start a reconnect.
            teardown(roomId)
        }
        sink.yield(event)
        if case .status(_, .lost) = event, let link = session.link {
            // Issue 16: the cluster ended the session, not the user: re-enter with the resume point, the
            // same path as a dropped connection (connectionState events, then enterOK or autoLoginFailed).
            linkClosed(link.id)
            forget(link: link.id)
            Task { await link.close() }
        }
    }

    private func linkClosed(_ linkId: Int) {
        pending.fail(link: linkId, ChatroomError.lost("connection closed"))
        guard let roomId = links.removeValue(forKey: linkId), var session = rooms[roomId], session.link?.id == linkId else { return }
        session.heartbeat?.cancel()
        session.heartbeat = nil
        session.link = nil
        session.early = []
        guard session.phase == .entered else {
            rooms[roomId] = session
            return
        }
        session.phase = .reconnecting
        rooms[roomId] = session
        sink.yield(.connectionState(roomId: roomId, .loseConnection))
        let policy = ReconnectPolicy(retryCount: session.request.retryCount, delay: configuration.reconnectDelay)
        let epoch = session.epoch
        rooms[roomId]?.reconnect = Task { [weak self] in await self?.reconnect(roomId, epoch: epoch, policy: policy) }
    }

    /// E8: up to retryCount attempts, each over the whole address list, each re-entering with the resume
    /// point. A final refusal (ReconnectPolicy.finalCodes) or running out of attempts is autoLoginFailed.
    private func reconnect(_ roomId: String, epoch: Int, policy: ReconnectPolicy) async {
        var lastError = ChatroomError.lost("retryCount is 0: not re-entering \(roomId)")
        if policy.retryCount > 0 {
            for attempt in 1...policy.retryCount {
                try? await Task.sleep(for: policy.wait(beforeAttempt: attempt))
                guard !Task.isCancelled, let session = rooms[roomId], session.epoch == epoch else { return }
                sink.yield(.connectionState(roomId: roomId, .entering))
                do {
                    _ = try await connectAndEnter(roomId, epoch: epoch, resume: session.ledger.resumePoint)
                    sink.yield(.connectionState(roomId: roomId, .enterOK))
                    return
                } catch {
                    guard rooms[roomId]?.epoch == epoch else { return }
                    lastError = (error as? ChatroomError) ?? ChatroomError.lost("\(error)")
                    sink.yield(.connectionState(roomId: roomId, .enterFailed))
                    if ReconnectPolicy.endsRetrying(lastError) { break }
                }
            }
        }
        guard rooms[roomId]?.epoch == epoch else { return }
        teardown(roomId)
        sink.yield(.autoLoginFailed(roomId: roomId, lastError))
    }

    // MARK: Moving to another edge (C5)

    /// The room's edge is draining: enter the room at `addresses` with the resume point, taking over the
    /// session there (`replacing`), while the old link stays open; then close the old link. The app sees no
    /// connection state change and the room no exit and re-entry. If no address takes the room, the room
    /// reconnects as after any loss.
    private func handOver(_ roomId: String, to addresses: [String], replacing: String, from linkId: Int) {
        guard let session = rooms[roomId], session.phase == .entered, let old = session.link, old.id == linkId,
              session.handOver == nil else { return }
        let epoch = session.epoch
        rooms[roomId]?.handOver = Task { [weak self] in
            await self?.move(roomId, epoch: epoch, to: addresses, replacing: replacing, from: old)
        }
    }

    private func move(_ roomId: String, epoch: Int, to addresses: [String], replacing: String, from old: WebSocketLink) async {
        defer { if rooms[roomId]?.epoch == epoch { rooms[roomId]?.handOver = nil } }
        guard let resume = rooms[roomId]?.ledger.resumePoint else { return }
        do {
            _ = try await connectAndEnter(roomId, epoch: epoch, resume: resume, addresses: addresses, replacing: replacing)
            configuration.logger.info("room \(roomId) moved from \(old.address) to \(rooms[roomId]?.link?.address ?? "?")")
        } catch {
            guard rooms[roomId]?.epoch == epoch else { return }
            configuration.logger.info("room \(roomId) could not move from draining \(old.address): \(error)")
            // Back to the old link, then lost: the usual reconnect resumes from the ledger.
            rooms[roomId]?.link = old
            rooms[roomId]?.phase = .entered
            links[old.id] = roomId
            linkClosed(old.id)
        }
        forget(link: old.id)
        await old.close()
    }

    // MARK: Teardown

    private func forget(link linkId: Int) {
        links[linkId] = nil
        pending.fail(link: linkId, ChatroomError.lost("connection closed"))
    }

    /// Forgets the room and closes its connection; the link's close no longer reaches the room.
    private func teardown(_ roomId: String) {
        guard let session = rooms.removeValue(forKey: roomId) else { return }
        session.heartbeat?.cancel()
        session.reconnect?.cancel()
        session.handOver?.cancel()
        if let link = session.link {
            forget(link: link.id)
            Task { await link.close() }
        }
    }
}
