import Foundation
import NIOCore
import ParleyCluster
import ParleyIM
import ParleyRooms
import ParleyShardState
import ParleyPlacement

/// Issue 19: a connection's IM side (docs/protocol.md, "IM"): the login, the user's commands and reads, and
/// the delivery of IM events from the shards' feeds to every device logged in as their user.
extension Edge {
    func im(_ connection: UInt64, id: Int64, _ op: ImOp) async {
        guard let c = connections[connection] else { return }
        if case .login(let appKey, let account, let token) = op {
            await imLogin(connection, id: id, appKey: appKey, account: account, token: token)
            return
        }
        guard let login = c.im else {
            c.send(EventFrame.error(id: id, .imLoginRequired))
            return
        }
        for account in Set(op.namedAccounts).sorted() where !(await cluster.userExists(appKey: login.appKey, account: account)) {
            connections[connection]?.send(EventFrame.error(id: id, .cluster(ImErrorCode.noSuchUser.rawValue, "no account \(account)")))
            return
        }
        // Issue 38: nothing of read receipts is written or read until every node reads it (a rolling upgrade).
        if op.isReceipt, !(await cluster.everyNodeHas(.readReceipts)) {
            connections[connection]?.send(EventFrame.error(id: id, .cluster(5030, "read receipts wait until every node reads them (peer protocol 11)")))
            return
        }
        // Issue 38: a supergroup is created only once every node reads supergroups.
        if case .team(_, .create(let info)) = op, info.type == .superTeam, !(await cluster.everyNodeHas(.superTeams)) {
            connections[connection]?.send(EventFrame.error(id: id, .cluster(5030, "supergroups wait until every node reads them (peer protocol 14)")))
            return
        }
        let command: ImShardCommand
        var shard = login.shard
        var withoutMembers = false
        switch op {
        case .login: return
        case .user(let user): command = .user(user.scoped(in: login.namespace))
        case .send(var m):
            m.to = AppScope.scoped(m.to, in: login.namespace)
            shard = cluster.shard(ofUser: m.to)  // applied where the receiver's blocklist is
            command = .send(m)
        case .relations: command = .read(.relations)
        case .sync(let after, let limit): command = .read(.log(after: after, limit: limit))
        case .team(let teamId, let c):
            let scoped = AppScope.scoped(teamId, in: login.namespace)
            shard = cluster.shard(ofTeam: scoped)
            command = .team(teamId: scoped, c.scoped(in: login.namespace))
        case .teamQuery(let teamId, let after, let limit, let members):
            let scoped = AppScope.scoped(teamId, in: login.namespace)
            shard = cluster.shard(ofTeam: scoped)
            // Without the members, the leader leaves them out (peer protocol 14's read); beside an older node
            // they come and the edge drops them.
            withoutMembers = !members
            let leftOut = members ? false : await cluster.everyNodeHas(.superTeams)
            command = .read(leftOut ? .teamLog(teamId: scoped, after: after, limit: limit) : .team(teamId: scoped, after: after, limit: limit))
        case .markRead(.p2p(let peer, let through)):
            command = .markRead(.p2p(peer: AppScope.scoped(peer, in: login.namespace), throughSeq: through))
        case .markRead(.team(let teamId, let through)):
            let scoped = AppScope.scoped(teamId, in: login.namespace)
            shard = cluster.shard(ofTeam: scoped)
            command = .markRead(.team(teamId: scoped, throughSeq: through))
        case .teamReceipts(let teamId, let seqs):
            let scoped = AppScope.scoped(teamId, in: login.namespace)
            shard = cluster.shard(ofTeam: scoped)
            command = .read(.teamReceipts(teamId: scoped, seqs: seqs))
        case .conversations: command = .read(.conversations)
        }
        let identity = login.identity(of: c, edgeId: cluster.edgeId)
        var result: Result<ImApplied, ImError>
        do {
            result = try await cluster.submitIm(command, account: login.scoped, shard: shard, actor: .session(identity))
            if withoutMembers, case .success(.read(.team(var view))) = result {
                view.members = []
                result = .success(.read(.team(view)))
            }
        } catch {
            connections[connection]?.send(EventFrame.error(id: id, ProtocolError.from(error)))
            return
        }
        connections[connection]?.send(Self.imAnswer(id: id, result, namespace: login.namespace))
    }

    /// The answer to an IM op: what it applied or read, or its refusal with the app's own ids.
    static func imAnswer(id: Int64, _ result: Result<ImApplied, ImError>, namespace: String) -> String {
        switch result {
        case .failure(let e):
            return EventFrame.error(id: id, .cluster(e.code.rawValue, AppScope.localIds(in: e.message, namespace: namespace)))
        case .success(let applied):
            return EventFrame.answer(id: id) { j in
                j.beginObject()
                switch applied {
                case .sent(let s): j.field("seq", s.seq); j.field("time", s.time)
                case .read(.relations(let r)): j.key("relations"); j.relations(r)
                case .read(.log(let items, let next, let first)):
                    j.key("items"); j.beginArray(); for i in items { j.imItem(i) }; j.endArray()
                    j.field("nextSeq", next)
                    j.field("firstSeq", first)
                case .read(.team(let view)): j.key("team"); j.team(view)
                case .read(.teamReceipts(let receipts)): j.key("receipts"); j.teamReceipts(receipts)
                case .read(.conversations(let list, let teams)):
                    j.key("conversations"); j.conversations(list)
                    j.key("teams"); j.teamSummaries(teams)
                case .team(let o): if let seq = o.messageSeq { j.field("seq", seq) }
                default: break
                }
                j.endObject()
            }
        }
    }

    /// E4 for IM: the token is checked like an `im` enter's; the connection is then this user's device, its
    /// shard's feed runs while any device of this edge is logged in there.
    private func imLogin(_ connection: UInt64, id: Int64, appKey: String, account: String, token: String) async {
        guard let c = connections[connection] else { return }
        if let bound = c.im {
            c.send(bound.appKey == appKey && bound.account == account ? EventFrame.answer(id: id) { j in
                j.beginObject(); j.field("account", account); j.endObject()
            } : EventFrame.error(id: id, .otherAccount))
            return
        }
        if let room = c.account, room.mode == .anonymous || room.appKey != appKey || room.userId != account {
            c.send(EventFrame.error(id: id, .otherAccount))
            return
        }
        let keys = LoginThrottle.keys(remote: c.remoteHost, appKey: appKey, account: account)
        if let wait = loginThrottle.retryAfter(loginThrottle.holds(remote: c.remoteHost, appKey: appKey, account: account, at: .now),
                                               at: .now) {
            let error = ProtocolError.tooManyFailedLogins(retryAfterMillis: Int64(wait / .milliseconds(1)))
            c.send(EventFrame.error(id: id, error))
            close(connection, code: 4401, reason: error.message)
            return
        }
        let verdict = await cluster.checkToken(appKey: appKey, account: account, token: token)
        let refusal: ProtocolError?
        switch verdict {
        case .valid: refusal = nil
        case .unknownApp: refusal = .unknownApp
        case .unknownUser, .badToken: refusal = .badToken
        case .expired: refusal = .tokenExpired
        case .revoked: refusal = .tokenRevoked
        }
        if let refusal {
            loginThrottle.failed(keys, at: .now)
            metrics?.authFailed(Self.loginFailure(refusal) ?? "badToken")
            refusedLogins.happened(["reason": "\(refusal)", "from": "\(c.remoteHost)", "appKey": "\(appKey)", "account": "\(account)"])
            connections[connection]?.send(EventFrame.error(id: id, refusal))
            close(connection, code: 4401, reason: refusal.message)
            return
        }
        // Nothing IM is written until every node reads it (a rolling upgrade from before IM).
        guard await cluster.everyNodeHas(.im) else {
            connections[connection]?.send(EventFrame.error(id: id, .cluster(5030, "IM waits until every node reads IM commands (peer protocol 3)")))
            return
        }
        let namespace = AppScope.namespace(ofApp: appKey, legacyApp: settings.legacyRoomsApp)
        let scoped = AppScope.scoped(account, in: namespace)
        let shard = cluster.shard(ofUser: scoped)
        do {
            try await startFeed(shard)
        } catch {
            connections[connection]?.send(EventFrame.error(id: id, ProtocolError.from(error)))
            return
        }
        await readRequestBudget(ofApp: appKey)
        // Re-read after the awaits: the connection may have closed or logged in meanwhile.
        guard var conn = connections[connection], !conn.closing, conn.im == nil else {
            release(rooms: [])
            return
        }
        let login = ImLogin(appKey: appKey, account: account, scoped: scoped, namespace: namespace, shard: shard)
        conn.im = login
        connections[connection] = conn
        imSessions[scoped, default: []].insert(connection)
        imHolds[shard, default: 0] += 1
        // Where the user's log is now, so the device knows what to sync; the user's teams, whose feeds this
        // device follows (a team joined later arrives as a `teamMembership` event on the user's feed).
        let identity = login.identity(of: conn, edgeId: cluster.edgeId)
        var nextSeq: UInt64 = 0
        if case .success(.read(.log(_, let next, _)))? = try? await cluster.submitIm(
            .read(.log(after: UInt64.max, limit: 1)), account: scoped, shard: shard, actor: .session(identity)) {
            nextSeq = next
        }
        if case .success(.read(.relations(let r)))? = try? await cluster.submitIm(
            .read(.relations), account: scoped, shard: shard, actor: .session(identity)) {
            for team in r.teams { await follow(team: team, connection: connection) }
            // Asked after the answer: a login does not wait for the teams' shards.
            let teams = r.teams
            Task { await self.checkMemberships(of: connection, teams: teams) }
        }
        connections[connection]?.send(EventFrame.answer(id: id) { j in
            j.beginObject(); j.field("account", account); j.field("nextSeq", nextSeq); j.endObject()
        })
    }

    /// The connection closed: it is no longer a device of its user here.
    func imLoggedOut(_ connection: UInt64, _ login: ImLogin) {
        imSessions[login.scoped]?.remove(connection)
        if imSessions[login.scoped]?.isEmpty == true { imSessions[login.scoped] = nil }
        for shard in [login.shard] + Array(login.teams.values) { drop(hold: shard) }
        for team in login.teams.keys { stopFollowing(team, connection) }
        release(rooms: [])
    }

    private func drop(hold shard: ShardID) {
        imHolds[shard, default: 1] -= 1
        if imHolds[shard]! <= 0 { imHolds[shard] = nil }
    }

    /// The connection's device follows the team: the team shard's feed runs while it does.
    private func follow(team: String, connection: UInt64) async {
        // Only a connection still logged in (it may have closed during an await) takes a hold.
        guard connections[connection]?.im.map({ $0.teams[team] == nil }) == true else { return }
        let shard = cluster.shard(ofTeam: team)
        connections[connection]?.im?.teams[team] = shard
        connections[connection]?.im?.checks[team] = .unchecked(leftAt: nil)
        teamFollowers[team, default: []].insert(connection)
        imHolds[shard, default: 0] += 1
        // A feed that cannot start now is started by the next login or membership change; the device's SDK
        // fetches the team's log from the join's sequence either way.
        try? await startFeed(shard)
    }

    func unfollow(team: String, connection: UInt64) {
        guard let shard = connections[connection]?.im?.teams.removeValue(forKey: team) else { return }
        connections[connection]?.im?.checks[team] = nil
        stopFollowing(team, connection)
        drop(hold: shard)
        release(rooms: [])
    }

    /// Writes each IM event to every device of the users it is for, on this edge.
    func deliverIm(_ events: [ImFeedEvent]) async {
        for event in events {
            switch event {
            case .user(let e):
                guard let devices = imSessions[e.account] else { continue }
                // The frame goes before the team is followed: a team item that following brings must not overtake
                // the join it belongs to. The SDK fills a team from the join's `fromSeq` when it hears of it, but
                // starts a team it has not heard of at the first item it hears.
                let frame = TextFrame(EventFrame.im(e))
                for n in devices.sorted() { connections[n]?.send(frame) }
                if case .teamMembership(let team, let isMember, _) = e.kind {
                    for n in devices.sorted() {
                        if isMember {
                            if connections[n]?.im?.teams[team] != nil {
                                // Followed still: the user feed is ahead of the team's, whose departure (and
                                // any answer from before it) would end a membership the user has again. Asked
                                // afresh: the answer then postdates this join.
                                connections[n]?.im?.checks[team] = .unchecked(leftAt: nil)
                            } else {
                                await follow(team: team, connection: n)
                            }
                            Task { await self.checkMemberships(of: n, teams: [team]) }
                        } else {
                            unfollow(team: team, connection: n)
                        }
                    }
                }
            case .team(let e, let members):
                let frames = TeamFrames(e)
                for account in Set(members + e.alsoTo).sorted() {
                    guard let devices = imSessions[account] else { continue }
                    let frame = frames.for(account)
                    for n in devices.sorted() { connections[n]?.send(frame) }
                }
                if e.dismisses { unfollowAll(e.teamId) }
            case .superTeam(let e):
                deliverSuperTeam(e)
            }
        }
    }

    /// The feed of a user shard skipped events: its logged-in devices sync from the last seq they hold.
    func imFeedGap(shard: ShardID) {
        for (_, devices) in imSessions {
            for n in devices.sorted() where connections[n]?.im?.shard == shard {
                connections[n]?.send(EventFrame.imSyncNeeded)
            }
        }
        forgetMemberships(onShard: shard)
    }
}
