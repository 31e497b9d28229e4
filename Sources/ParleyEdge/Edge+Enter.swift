import Foundation
import ParleyCluster
import ParleyRooms
import ParleyPlacement

extension Edge {
    /// E1 / E4 / E5 / X2: authenticate, start the shard's feed, propose the enter, answer, replay a resume,
    /// then let the buffered live events through.
    func enter(_ connection: UInt64, id: Int64, _ request: EnterRequest) async {
        guard let c = connections[connection] else { return }
        if let bound = c.account {
            let sameAccount = request.mode == .anonymous || bound.userId == request.account
            guard bound.mode == request.mode, bound.appKey == request.appKey, sameAccount else {
                c.send(EventFrame.error(id: id, .otherAccount))
                return
            }
        }
        // Issue 19: a connection logged in for IM enters rooms as that user only.
        if let im = c.im, request.mode == .anonymous || im.appKey != request.appKey || im.account != request.account {
            c.send(EventFrame.error(id: id, .otherAccount))
            return
        }
        guard !c.rooms.contains(request.roomId) else {
            c.send(EventFrame.error(id: id, .alreadyEntered))
            return
        }
        let userId: String
        let loginKeys = request.mode == .anonymous ? [] :
            LoginThrottle.keys(remote: c.remoteHost, appKey: request.appKey, account: request.account)
        let holds = request.mode == .anonymous ? [] :
            loginThrottle.holds(remote: c.remoteHost, appKey: request.appKey, account: request.account, at: .now)
        if let wait = loginThrottle.retryAfter(holds, at: .now) {
            let error = ProtocolError.tooManyFailedLogins(retryAfterMillis: wait.components.seconds * 1000
                                                          + wait.components.attoseconds / 1_000_000_000_000_000)
            loginRefused(c, request, reason: "throttled")
            c.send(EventFrame.error(id: id, error))
            close(connection, code: 4401, reason: error.message)
            return
        }
        switch await authenticate(c, request) {
        case .failure(let error):
            if let reason = Self.loginFailure(error) {
                loginThrottle.failed(loginKeys, at: .now)
                loginRefused(c, request, reason: reason)
            }
            connections[connection]?.send(EventFrame.error(id: id, error))
            if error.closesConnection { close(connection, code: 4401, reason: error.message) }
            return
        case .success(let user):
            userId = user
        }
        // A1: from this enter on the connection spends its app's request budget.
        await readRequestBudget(ofApp: request.appKey)
        // Re-read after the await: the connection may have closed or entered the room meanwhile.
        guard var conn = connections[connection], !conn.closing, !conn.rooms.contains(request.roomId) else { return }
        if conn.account == nil { conn.account = (userId, request.mode, request.appKey) }
        conn.rooms.insert(request.roomId)
        connections[connection] = conn
        let shard = cluster.shard(ofRoom: request.roomId)
        var room = rooms[request.roomId] ?? LocalRoom(shard: shard, app: request.appKey)
        room.sessions[connection] = LocalSession(userId: userId, sessionId: conn.sessionId, socket: conn.socket)
        rooms[request.roomId] = room
        updateGauges()

        let identity = SessionIdentity(userId: userId, authMode: request.mode, sessionId: conn.sessionId,
                                       edgeId: cluster.edgeId)
        // C5 take-over (command tag 38) only once every node reads it: during a rolling upgrade from a version
        // without it, a moving client enters as a new session (its old one exits when its edge lets go).
        var replacing = request.replacing
        if !replacing.isEmpty, !(await cluster.everyNodeHas(.sessionTakeOver)) {
            replacing = ""
            takeOverHeldBack()
        }
        let command = RoomCommand.enter(EnterRoom(
            roomId: request.roomId, nickname: request.nickname ?? "", avatar: request.avatar ?? "",
            roomExt: request.roomExt, roomNotifyExt: request.roomNotifyExt, replacing: replacing))
        let result: EnterResult
        var events: [RoomEvent] = []
        do {
            // The feed starts (cursor = the replica's present) before the enter is proposed, so the enter's
            // own events and everything after reach this session.
            // E3 across shards: a slot on the user's home shard first (13101 for an 11th room). Holding it
            // counts this edge among the home shard's, so that shard's feed runs too (the lease).
            let home = homeShard(of: userId)
            try await startFeed(home)
            let claim = try await cluster.submit(.claimRoomSlot(roomId: request.roomId), shard: home,
                                                 actor: .session(identity))
            let claimed = try claim.result.get()
            slotHolds[home, default: 0] += 1
            if connections[connection] != nil {
                connections[connection]?.slots.insert(request.roomId)
            } else {
                releaseSlot(identity, roomId: request.roomId)  // closed while claiming
            }
            if case .roomIds(let others) = claimed {
                // RC one-room policy: rooms in other shards are left first (this shard's go with the enter).
                for other in others where cluster.shard(ofRoom: other) != shard {
                    _ = try? await cluster.submit(.yieldRoom(roomId: other), shard: cluster.shard(ofRoom: other),
                                                  actor: .session(identity))
                }
            }
            try await startFeed(shard)
            let outcome = try await cluster.submit(command, shard: shard, actor: .session(identity))
            guard case .entered(let entered) = try outcome.result.get() else {
                throw EdgeClusterError.unavailable("enter answered with another reply")
            }
            result = entered
            events = outcome.events
        } catch {
            connections[connection]?.send(EventFrame.error(id: id, ProtocolError.from(error)))
            leave(connection, roomId: request.roomId)
            if case EdgeClusterError.timedOut = error {
                // 5040: the enter may have applied. This edge keeps its lease, so such a session would never
                // end on its own: propose the exit (a no-op 13100 if the enter did not apply).
                let cluster = self.cluster
                Task { _ = try? await cluster.submit(.exit(roomId: request.roomId), shard: shard, actor: .session(identity)) }
            }
            return
        }

        // Room-wide events before this enter are not the session's; its own 301 (if any) is.
        let enterSeqs = events.map(\.seq).filter { $0 > 0 }
        var floor = enterSeqs.min().map { $0 - 1 } ?? result.room.seq
        var replay: [HistoryItem] = []
        var gapTooOld = false
        var replayFrom: UInt64?
        if let lastSeq = request.lastSeq {
            // A9: at most `maxResumeEvents` are replayed; a wider gap gets `gapTooOld` with the newest of them,
            // and the client pages history for the rest (an anonymous lastSeq 0 into a room of 30,000
            // messages replayed all 30,004 frames).
            let roomSeq = result.room.seq
            let bound = UInt64(max(1, settings.maxResumeEvents))
            let after = roomSeq > lastSeq && roomSeq - lastSeq > bound ? roomSeq - bound : lastSeq
            switch await history(roomId: request.roomId, shard: shard, after: after, upTo: roomSeq) {
            case .success(let items):
                replay = items
                floor = max(after, items.last?.seq ?? after)
                gapTooOld = after > lastSeq
                replayFrom = after + 1
            case .failure(let e) where e.code == RoomErrorCode.historyGone.rawValue:
                gapTooOld = true
                replayFrom = roomSeq + 1
            case .failure:
                // The history read failed (no leader): the client still entered; it refetches on its own.
                gapTooOld = true
                replayFrom = roomSeq + 1
            }
        }
        guard let c = connections[connection], var session = rooms[request.roomId]?.sessions[connection] else {
            // Closed (or kicked) while the enter was in flight: an exit proposed by `closed` may have been
            // ordered before the enter, so end the session again rather than leave it to the lease.
            let cluster = self.cluster
            Task { _ = try? await cluster.submit(.exit(roomId: request.roomId), shard: shard, actor: .session(identity)) }
            return
        }
        let resumed = request.lastSeq != nil && !gapTooOld
        c.send(EventFrame.answer(id: id) { j in
            j.beginObject()
            j.key("room"); j.room(result.room)
            j.key("member"); j.member(result.member)
            j.field("authMode", result.authMode.protocolName)
            j.field("account", userId)
            j.field("resumed", resumed)
            j.field("gapTooOld", gapTooOld)
            if let replayFrom { j.field("replayFromSeq", replayFrom) }
            j.endObject()
        })
        for item in replay { c.send(EventFrame.encode(item, roomId: request.roomId)) }
        session.floor = floor
        session.buffering = false
        var kicked = false
        for entry in session.buffer where entry.seq == 0 || entry.seq > floor {
            c.send(entry.frame)
            kicked = kicked || entry.kicked
        }
        session.buffer = []
        rooms[request.roomId]?.sessions[connection] = session
        if kicked { leave(connection, roomId: request.roomId) }
    }

    /// The metric reason of a refused login (nil: not a failed login).
    static func loginFailure(_ error: ProtocolError) -> String? {
        switch error {
        case .badToken: "badToken"
        case .tokenExpired: "tokenExpired"
        case .tokenRevoked: "tokenRevoked"
        case .unknownApp: "unknownApp"
        default: nil
        }
    }

    /// Counts a refused login and logs it — at most one line per 10 s, with how many were refused since.
    func loginRefused(_ c: ClientConnection, _ request: EnterRequest, reason: String) {
        metrics?.authFailed(reason)
        refusedLogins.happened(["reason": "\(reason)", "from": "\(c.remoteHost)", "appKey": "\(request.appKey)",
                                "account": "\(request.account)"])
    }

    /// E4 / E5: the user id of the enter, or why it is refused.
    private func authenticate(_ c: ClientConnection, _ request: EnterRequest) async -> Result<String, ProtocolError> {
        if request.mode == .anonymous {
            guard let nickname = request.nickname, !nickname.isEmpty, let avatar = request.avatar, !avatar.isEmpty else {
                return .failure(.anonymousNeedsProfile)
            }
            guard await cluster.appExists(request.appKey) else { return .failure(.unknownApp) }
            if let bound = c.account { return .success(bound.userId) }
            return .success("anon-" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))
        }
        if request.mode == .imSession, request.token.isEmpty, let im = c.im, im.appKey == request.appKey, im.account == request.account {
            return .success(im.account)  // E4: the connection's IM login vouches for the account
        }
        switch await cluster.checkToken(appKey: request.appKey, account: request.account, token: request.token) {
        case .valid(let user): return .success(user.account)
        case .unknownApp: return .failure(.unknownApp)
        case .unknownUser, .badToken: return .failure(.badToken)
        case .expired: return .failure(.tokenExpired)
        case .revoked: return .failure(.tokenRevoked)
        }
    }

    /// X2: history items with seq > `after`, paging while pages come back full, up to `upTo` (0 = all).
    func history(roomId: String, shard: ShardID, after: UInt64, upTo: UInt64) async -> Result<[HistoryItem], ProtocolError> {
        var items: [HistoryItem] = []
        var cursor = after
        let limit = settings.historyPageLimit
        while true {
            let page: [HistoryItem]
            do {
                let outcome = try await cluster.submit(.historySince(roomId: roomId, afterSeq: cursor, limit: limit),
                                                       shard: shard, actor: .appServer)
                guard case .history(let list) = try outcome.result.get() else { return .success(items) }
                page = list
            } catch {
                return .failure(ProtocolError.from(error))
            }
            items.append(contentsOf: page)
            guard page.count >= limit, let last = page.last?.seq, last > cursor, upTo == 0 || last < upTo else {
                return .success(items)
            }
            cursor = last
        }
    }
}
