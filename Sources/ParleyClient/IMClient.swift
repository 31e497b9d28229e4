import Foundation
import Logging

/// Issue 19: the IM side of the SDK (the seed's NIMSDK login, user, chat, team and system notification
/// managers) over one WebSocket (docs/protocol.md, "IM"; docs/sdk.md). After `login` the client keeps the
/// user's log in step: it syncs what the device missed (from `lastSeq`, the highest item it delivered) in
/// order, then delivers live items, each once; it reconnects and logs in again by itself after a lost
/// connection, and syncs again. Team items are delivered per team in order, each once; a team joined while
/// away or a hole in a team's items is filled from the team's log.
public actor IMClient: RequestChannel {
    public struct Configuration: Sendable {
        /// Edges to log in through, best first.
        public var addresses: @Sendable () async throws -> [String]
        public var requestTimeout: Duration = .seconds(10)
        public var connectTimeout: Duration = .seconds(10)
        /// Wait before reconnect attempt n is n × this (at most 20 attempts, then `loginFailed`).
        public var reconnectDelay: Duration = .milliseconds(500)
        public var clientName = "parley-swift/0.1"
        /// SPEC T1: edges serve TLS (`wss://`), trusted as this says; nil dials `ws://` (see `EdgeTLS`).
        public var tls: EdgeTLS?
        public var logger = Logger(label: "parley.im")

        public init(addresses: @escaping @Sendable () async throws -> [String]) { self.addresses = addresses }

        public static func addresses(_ list: [String]) -> Configuration { Configuration { list } }
    }

    private struct Login { var appKey: String; var account: String; var token: String }
    private struct LoginAnswer: Decodable { var account: String; var nextSeq: Int64 }
    private struct SyncPage: Decodable { var items: [IMItem]; var nextSeq: Int64; var firstSeq: Int64 }

    public nonisolated let events: AsyncStream<IMEvent>
    private let sink: AsyncStream<IMEvent>.Continuation
    let configuration: Configuration
    private var credentials: Login?
    private var link: WebSocketLink?
    private var lastLinkId = 0
    private var heartbeat: Task<Void, Never>?
    private var reconnect: Task<Void, Never>?
    var pending = PendingRequests()
    var requestTimeout: Duration { configuration.requestTimeout }
    /// The highest item of the user's log delivered to the app.
    public private(set) var lastSeq: Int64
    /// Live items held while a sync runs (delivered after it, those above `lastSeq`).
    private var syncing = false
    private var early: [IMItem] = []
    /// Per team: the highest item delivered; teams being filled from their log, with live items held meanwhile.
    private var teamSeqs: [String: Int64] = [:]
    private var filling: [String: [(TeamItem, Bool)]] = [:]
    private var closed = false

    /// `lastSeq`: the highest log item this device already has (persisted by the app across runs).
    public init(configuration: Configuration, lastSeq: Int64 = 0) {
        self.configuration = configuration
        self.lastSeq = lastSeq
        let (stream, continuation) = AsyncStream.makeStream(of: IMEvent.self)
        events = stream
        sink = continuation
    }

    // MARK: Login

    /// Logs in (E4: the app server's token for this account) and syncs what the device missed. Returns the
    /// log's next sequence.
    @discardableResult
    public func login(appKey: String, account: String, token: String) async throws -> Int64 {
        guard credentials == nil else { throw ChatroomError(code: ChatroomError.otherAccount, message: "already logged in") }
        credentials = Login(appKey: appKey, account: account, token: token)
        sink.yield(.connectionState(.loggingIn))
        do {
            let next = try await connectAndLogin()
            sink.yield(.connectionState(.loggedIn))
            return next
        } catch {
            credentials = nil
            let e = (error as? ChatroomError) ?? ChatroomError.lost("\(error)")
            sink.yield(.connectionState(.loginFailed(e)))
            throw e
        }
    }

    /// Closes the connection (the server forgets this device) and ends `events`.
    public func logout() {
        closed = true
        credentials = nil
        reconnect?.cancel()
        heartbeat?.cancel()
        if let link {
            self.link = nil
            pending.fail(link: link.id, ChatroomError.lost("logged out"))
            Task { await link.close() }
        }
        sink.finish()
    }

    private func connectAndLogin() async throws -> Int64 {
        guard let login = credentials else { throw ChatroomError.lost("logged out") }
        let addresses = try await configuration.addresses()
        var lastError = ChatroomError.lost("no address to log in through")
        for address in addresses {
            lastLinkId += 1
            let id = lastLinkId
            let candidate: WebSocketLink
            do {
                candidate = try await WebSocketLink.open(
                    id: id, address: address, tls: configuration.tls, maxMessageBytes: ChatroomClient.maxMessageBytes, timeout: configuration.connectTimeout,
                    logger: configuration.logger,
                    onText: { [weak self] text in await self?.receive(text, link: id) },
                    onClose: { [weak self] in await self?.linkClosed(id) })
            } catch {
                lastError = (error as? ChatroomError) ?? ChatroomError.lost("\(error)")
                continue
            }
            link = candidate
            do {
                let hello = try decode(ChatroomClient.Hello.self, try await send(.hello(versions: ChatroomClient.protocolVersions,
                                                                                     client: configuration.clientName)))
                let answer = try decode(LoginAnswer.self, try await send(ChatroomRequest(op: "imLogin", fields: [
                    "auth": .object(["mode": "im", "appKey": .string(login.appKey), "account": .string(login.account),
                                     "token": .string(login.token)]),
                ])))
                heartbeat?.cancel()
                heartbeat = Task { [weak self] in await self?.beat(every: .milliseconds(hello.heartbeatMs), link: candidate) }
                try await sync()
                await refillTeams()
                // Recent sessions with their unread counts (issue 38); a cluster still upgrading (5030) has none.
                if let list = try? await decode(IMConversationList.self, try await send(ChatroomRequest(op: "conversations", fields: [:]))) {
                    sink.yield(.conversations(list))
                }
                return answer.nextSeq
            } catch let error as ChatroomError {
                if link?.id == id { link = nil }
                await candidate.close()
                lastError = error
                if !ReconnectPolicy.triesNextAddress(error) { throw error }
            }
        }
        throw lastError
    }

    private func linkClosed(_ id: Int) {
        pending.fail(link: id, ChatroomError.lost("connection closed"))
        guard link?.id == id else { return }
        link = nil
        heartbeat?.cancel()
        guard !closed, credentials != nil, reconnect == nil else { return }
        sink.yield(.connectionState(.lost))
        reconnect = Task { [weak self] in await self?.reconnectLoop() }
    }

    private func reconnectLoop() async {
        for attempt in 1...20 {
            try? await Task.sleep(for: configuration.reconnectDelay * attempt)
            if Task.isCancelled || closed { return }
            do {
                _ = try await connectAndLogin()
                reconnect = nil
                sink.yield(.connectionState(.loggedIn))
                return
            } catch let error as ChatroomError where !ReconnectPolicy.triesNextAddress(error) {
                reconnect = nil
                credentials = nil
                sink.yield(.connectionState(.loginFailed(error)))
                return
            } catch {
                continue
            }
        }
        reconnect = nil
        credentials = nil
        sink.yield(.connectionState(.loginFailed(ChatroomError.lost("could not log in again"))))
    }

    private func beat(every interval: Duration, link: WebSocketLink) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            do {
                _ = try await send(.ping)
            } catch let error as ChatroomError where error.code != ChatroomError.timeout && error.code != ChatroomError.connectionLost {
                continue  // a refusal (416: the connection's request budget) came from a live edge
            } catch {
                linkClosed(link.id)
                Task { await link.close(); link.abort() }
                return
            }
        }
    }

    // MARK: Sync

    /// Delivers every item after `lastSeq` in order, page by page; live items wait meanwhile.
    private func sync() async throws {
        guard !syncing else { return }
        syncing = true
        defer { syncing = false }
        while true {
            let page: SyncPage
            do {
                page = try decode(SyncPage.self, try await send(ChatroomRequest(op: "syncIm", fields: [
                    "afterSeq": .int(lastSeq), "limit": 500,
                ])))
            } catch let error as ChatroomError where error.code == 14207 {
                // The server no longer keeps what follows lastSeq: say what is lost, continue from what is kept.
                let head = try decode(SyncPage.self, try await send(ChatroomRequest(op: "syncIm", fields: [
                    "afterSeq": .int(Int64.max), "limit": 1,
                ])))
                sink.yield(.historyGone(fromSeq: lastSeq + 1, toSeq: head.firstSeq - 1))
                lastSeq = head.firstSeq - 1
                continue
            }
            for item in page.items where item.seq == lastSeq + 1 {
                lastSeq = item.seq
                sink.yield(.item(item))
            }
            if page.items.isEmpty || lastSeq + 1 >= page.nextSeq { break }
        }
        let held = early
        early = []
        for item in held { admit(item) }
    }

    private func admit(_ item: IMItem) {
        if syncing {
            early.append(item)
            return
        }
        guard item.seq > lastSeq else { return }  // synced or delivered already
        guard item.seq == lastSeq + 1 else {
            // A hole (the edge's feed skipped): fill it from the log before going on.
            early.append(item)
            Task { try? await self.sync() }
            return
        }
        lastSeq = item.seq
        sink.yield(.item(item))
    }

    /// After a (re)login: every team the device delivered items of is filled from its log.
    private func refillTeams() async {
        for (team, seq) in teamSeqs { await fill(team: team, after: seq) }
    }

    private func fill(team: String, after seq: Int64) async {
        guard filling[team] == nil else { return }
        filling[team] = []
        var cursor = seq
        // The items only: a supergroup's member list is thousands long and a fill does not need it.
        while let page = try? await fetchTeam(team, afterSeq: cursor, limit: 500, members: false), !page.items.isEmpty {
            for item in page.items { deliverTeam(team, item, alert: true, filling: true) }
            cursor = page.items.last!.seq
            if cursor + 1 >= page.nextSeq { break }
        }
        let held = filling.removeValue(forKey: team) ?? []
        for (item, alert) in held { deliverTeam(team, item, alert: alert, filling: false) }
    }

    private func deliverTeam(_ team: String, _ item: TeamItem, alert: Bool, filling isFill: Bool) {
        if !isFill, filling[team] != nil {
            filling[team]!.append((item, alert))
            return
        }
        let last = teamSeqs[team]
        if let last, item.seq <= last { return }
        if let last, item.seq > last + 1, !isFill {
            filling[team] = [(item, alert)]
            Task { await self.resumeFill(team: team, after: last) }
            return
        }
        teamSeqs[team] = item.seq
        sink.yield(.teamItem(teamId: team, item, alert: alert))
    }

    private func resumeFill(team: String, after seq: Int64) async {
        let held = filling.removeValue(forKey: team) ?? []
        await fill(team: team, after: seq)
        for (item, alert) in held { deliverTeam(team, item, alert: alert, filling: false) }
    }

    /// The logged-in account.
    func currentAccount() throws -> String {
        guard let credentials else { throw ChatroomError.lost("not logged in") }
        return credentials.account
    }

    // MARK: Requests

    func call(_ op: String, _ fields: [String: JSONValue] = [:]) async throws -> Data {
        guard credentials != nil, link != nil else { throw ChatroomError.lost("not logged in") }
        return try await send(ChatroomRequest(op: op, fields: fields))
    }

    func call<T: Decodable>(_ op: String, _ fields: [String: JSONValue] = [:], answer: T.Type) async throws -> T {
        try decode(T.self, try await call(op, fields))
    }

    private func send(_ request: ChatroomRequest) async throws -> Data {
        guard let link else { throw ChatroomError.lost("no connection") }
        return try await send(request, on: link)
    }

    private func decode<T: Decodable>(_: T.Type, _ frame: Data) throws -> T {
        do {
            return try InboundFrame.data(T.self, from: frame)
        } catch {
            throw ChatroomError(code: ChatroomError.badParameter, message: "undecodable answer: \(error)")
        }
    }

    // MARK: Inbound

    private struct Head: Decodable {
        var id: Int?
        var ok: Bool?
        var error: ChatroomError?
        var event: String?
        var kind: String?
        var item: IMItem?
        var friend: String?
        var isFriend: Bool?
        var teamId: String?
        var isMember: Bool?
        var fromSeq: Int64?
        var alert: Bool?
        var peer: String?
        var reader: String?
        var throughSeq: Int64?
    }

    private struct TeamFrame: Decodable { var teamId: String; var alert: Bool; var item: TeamItem }

    private func receive(_ text: String, link id: Int) {
        let data = Data(text.utf8)
        guard link?.id == id, let head = try? JSONDecoder().decode(Head.self, from: data) else { return }
        if let requestId = head.id {
            pending.resolve(requestId, head.ok == true ? .success(data)
                : .failure(head.error ?? ChatroomError(code: ChatroomError.badParameter, message: "answer without ok or error")))
            return
        }
        switch (head.event, head.kind) {
        case ("im", "item"): if let item = head.item { admit(item) }
        case ("im", "friendChanged"):
            if let friend = head.friend, let isFriend = head.isFriend { sink.yield(.friendChanged(friend: friend, isFriend: isFriend)) }
        case ("im", "blocklistChanged"): sink.yield(.blocklistChanged)
        case ("im", "muteListChanged"): sink.yield(.muteListChanged)
        case ("im", "syncNeeded"): Task { try? await self.sync() }
        case ("im", "teamMembership"):
            guard let team = head.teamId, let isMember = head.isMember else { return }
            sink.yield(.teamMembership(teamId: team, isMember: isMember))
            // A team joined: what it holds from the join on (its Invite, ApplyPass, … notification) may have
            // been applied before this edge followed the team. Held from now: an item that arrives before the
            // fill starts must not become where the team starts, or the fill would skip what came before it.
            if isMember, teamSeqs[team] == nil, filling[team] == nil {
                filling[team] = []
                Task { await self.resumeFill(team: team, after: max(0, (head.fromSeq ?? 1) - 1)) }
            }
        case ("im", "p2pRead"):
            if let peer = head.peer, let reader = head.reader, let through = head.throughSeq {
                sink.yield(.p2pRead(peer: peer, reader: reader, throughSeq: through))
            }
        case ("im", "teamRead"):
            if let team = head.teamId, let reader = head.reader, let through = head.throughSeq {
                sink.yield(.teamRead(teamId: team, reader: reader, throughSeq: through))
            }
        case ("team", _):
            guard let frame = try? JSONDecoder().decode(TeamFrame.self, from: data) else { return }
            deliverTeam(frame.teamId, frame.item, alert: frame.alert, filling: false)
        default:
            break  // an event this SDK version does not know
        }
    }
}
