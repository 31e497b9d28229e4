/// Teams (seed 001) on their shard: every command checks the operator's role as the seed implies — only the
/// owner transfers, dismisses and appoints managers; managers act on normal members; the invite and
/// update-info modes decide who invites and who edits — and produces the team notification message of its
/// event, stored in the team's log like any message. Membership reaches the members' user shards as effects.
extension ImShardState {
    public func team(_ teamId: String) -> TeamRecord? { teams[teamId] }

    public mutating func apply(_ command: TeamCommand, team teamId: String, context: ImContext) -> Result<TeamOutcome, ImError> {
        var outcome = TeamOutcome()
        var effects: [ImEffect] = []
        let me = context.actor
        do {
            try checkAccount(me)
            try check(!teamId.isEmpty && teamId.utf8.count <= limits.maxTeamIdBytes, "a team id is 1 to \(limits.maxTeamIdBytes) bytes")
            try checkNotifyExt(command, context)
            if case .create(let info) = command {
                try check(teams[teamId] == nil, "team \(teamId) exists", .teamExists)
                try checkInfo(info)
                teams[teamId] = TeamRecord(info: info, owner: me, at: context.time)
                effects.append(ImEffect(target: me, from: me, change: .joinedTeam(teamId, fromSeq: 1), at: context.time))
                queue(effects)
                return .success(outcome)
            }
            guard var team = teams[teamId] else { throw ImError(.noSuchTeam, "no team \(teamId)") }
            var dismissed = false
            try applyToTeam(command, teamId: teamId, team: &team, context: context, outcome: &outcome, effects: &effects,
                            dismissed: &dismissed)
            teams[teamId] = dismissed ? nil : team
        } catch let error as ImError {
            return .failure(error)
        } catch {
            return .failure(ImError(.badParameter, "\(error)"))
        }
        queue(effects)
        return .success(outcome)
    }

    mutating func queue(_ effects: [ImEffect]) {
        for effect in effects {
            outbox.append(OutboxEntry(seq: nextEffectSeq, effect: effect))
            nextEffectSeq += 1
        }
    }

    // swiftlint:disable:next function_body_length cyclomatic_complexity
    private func applyToTeam(_ command: TeamCommand, teamId: String, team: inout TeamRecord, context: ImContext,
                             outcome: inout TeamOutcome, effects: inout [ImEffect], dismissed: inout Bool) throws {
        let me = context.actor, now = context.time
        let myRole = team.role(of: me)
        func requireMember() throws -> TeamRole {
            guard let role = myRole else { throw ImError(.notMember, "\(me) is not a member of \(teamId)") }
            return role
        }
        func require(_ role: TeamRole, _ what: String) throws {
            guard try requireMember() >= role else { throw ImError(.noPermission, "only the \(role == .owner ? "owner" : "owner or a manager") \(what)") }
        }
        func targets(_ list: [String]) throws -> [String] {
            try check(!list.isEmpty && list.count <= limits.maxTargets, "1 to \(limits.maxTargets) targets")
            for t in list { try checkAccount(t) }
            return Array(Set(list)).sorted()
        }
        func notify(_ operation: TeamOperation, _ targets: [String], _ notifyExt: String,
                    attachment: [TeamUpdateTag: String] = [:], alsoTo: [String] = []) {
            let note = TeamNotification(operation: operation, source: me, targets: targets, notifyExt: notifyExt, attachment: attachment)
            let item = team.log.append(.notification(note), at: now, limits: limits)
            // Seed 001, team DND applies to notifications too: `none` alerts for none, `onlyManager` only for
            // what the owner or a manager did (the operator's role when it acted).
            let silent = team.silent(byManager: (myRole ?? .normal) >= .manager)
            outcome.events.append(TeamEvent(teamId: teamId, item: item, alsoTo: alsoTo, noAlert: silent))
        }
        func join(_ account: String) throws {
            let cap = limits.maxMembers(of: team.info.type)
            try check(team.members.count < cap, "\(cap) members", .teamFull)
            team.members[account] = TeamMember(role: .normal, joinedAt: now)
            team.invitations[account] = nil
            team.applications[account] = nil
            // The notification of the join is the next item of the team's log.
            effects.append(ImEffect(target: account, from: me, change: .joinedTeam(teamId, fromSeq: team.log.nextSeq), at: now))
        }
        func part(_ account: String) {
            team.remove(account)
            effects.append(ImEffect(target: account, from: me, change: .leftTeam(teamId), at: now))
        }

        switch command {
        case .create:
            preconditionFailure("handled by the caller")
        case .invite(let list, let postscript, let notifyExt):
            let invitees = try targets(list)
            try check(postscript.utf8.count <= limits.maxTeamTextBytes, "postscript over \(limits.maxTeamTextBytes) bytes")
            if team.info.inviteMode == .manager { try require(.manager, "invites") } else { _ = try requireMember() }
            for t in invitees { try check(team.members[t] == nil, "\(t) is a member", .alreadyMember) }
            let cap = limits.maxMembers(of: team.info.type)
            try check(team.members.count + invitees.count <= cap, "\(cap) members", .teamFull)
            if team.info.beInviteMode == .noAuth {
                for t in invitees { try join(t) }
                notify(.invite, invitees, notifyExt)
            } else {
                for t in invitees {
                    team.invitations[t] = TeamInvitation(inviter: me, postscript: postscript, at: now)
                    effects.append(ImEffect(target: t, from: me, change: .teamNotice(.invite, teamId: teamId, message: postscript), at: now))
                }
            }
        case .acceptInvitation:
            guard team.invitations[me] != nil else { throw ImError(.noInvitation, "no invitation to \(teamId)") }
            try join(me)
            notify(.acceptInvitation, [me], "")
        case .rejectInvitation:
            guard let invitation = team.invitations.removeValue(forKey: me) else { throw ImError(.noInvitation, "no invitation to \(teamId)") }
            effects.append(ImEffect(target: invitation.inviter, from: me, change: .teamNotice(.invitationRejected, teamId: teamId, message: ""), at: now))
        case .apply(let message):
            try check(message.utf8.count <= limits.maxTeamTextBytes, "message over \(limits.maxTeamTextBytes) bytes")
            try check(team.members[me] == nil, "\(me) is a member", .alreadyMember)
            switch team.info.joinMode {
            case .rejectAll:
                throw ImError(.applicationsRejected, "\(teamId) takes no applications")
            case .noAuth:
                try join(me)
                notify(.applyPass, [me], "")
            case .needAuth:
                team.applications[me] = FriendRequest(message: message, at: now)
                for (account, member) in team.members.sorted(by: { $0.key < $1.key }) where member.role >= .manager {
                    effects.append(ImEffect(target: account, from: me, change: .teamNotice(.apply, teamId: teamId, message: message), at: now))
                }
            }
        case .approveApplication(let applicant, let notifyExt):
            try require(.manager, "approves applications")
            guard team.applications[applicant] != nil else { throw ImError(.noInvitation, "no application from \(applicant)") }
            try join(applicant)
            notify(.applyPass, [applicant], notifyExt)
        case .rejectApplication(let applicant):
            try require(.manager, "rejects applications")
            guard team.applications.removeValue(forKey: applicant) != nil else { throw ImError(.noInvitation, "no application from \(applicant)") }
            effects.append(ImEffect(target: applicant, from: me, change: .teamNotice(.applicationRejected, teamId: teamId, message: ""), at: now))
        case .kick(let list, let notifyExt):
            let kicked = try targets(list)
            let role = try requireMember()
            try check(role >= .manager, "only the owner or a manager kicks", .noPermission)
            for t in kicked {
                guard let target = team.members[t] else { throw ImError(.notMember, "\(t) is not a member") }
                // The owner kicks anyone but itself; a manager only normal members.
                try check(t != me && target.role < role, "\(me) cannot kick \(t)", .noPermission)
            }
            for t in kicked { part(t) }
            notify(.kick, kicked, notifyExt, alsoTo: kicked)
        case .leave(let notifyExt):
            let role = try requireMember()
            try check(role != .owner, "the owner transfers the team or dismisses it", .noPermission)
            part(me)
            notify(.leave, [me], notifyExt, alsoTo: [me])
        case .update(let changes, let notifyExt):
            try check(!changes.isEmpty, "nothing to update")
            if team.info.updateInfoMode == .manager || changes[.muteMode] != nil || changes[.updateInfoMode] != nil
                || changes[.inviteMode] != nil || changes[.beInviteMode] != nil || changes[.joinMode] != nil {
                // Modes and muting everyone stay with the owner and managers whatever the update-info mode.
                try require(.manager, "edits this")
            } else {
                _ = try requireMember()
            }
            var info = team.info
            for (tag, value) in changes { try set(&info, tag, value) }
            try checkInfo(info)
            team.info = info
            notify(.update, [], notifyExt, attachment: changes)
        case .dismiss(let notifyExt):
            try require(.owner, "dismisses")
            let everyone = team.memberList
            notify(.dismiss, [], notifyExt, alsoTo: everyone)
            for t in everyone { effects.append(ImEffect(target: t, from: me, change: .leftTeam(teamId), at: now)) }
            dismissed = true
        case .transferOwner(let to, let leave, let notifyExt):
            try require(.owner, "transfers the team")
            try checkAccount(to)
            try check(to != me, "the owner already owns it", .badParameter)
            guard team.members[to] != nil else { throw ImError(.notMember, "\(to) is not a member") }
            team.members[to]!.role = .owner
            team.owner = to
            team.members[me]!.role = .normal
            notify(.transferOwner, [to], notifyExt)
            if leave {
                part(me)
                notify(.leave, [me], "", alsoTo: [me])
            }
        case .addManagers(let list, let notifyExt), .removeManagers(let list, let notifyExt):
            let adding: Bool
            if case .addManagers = command { adding = true } else { adding = false }
            let chosen = try targets(list)
            try require(.owner, adding ? "appoints managers" : "removes managers")
            for t in chosen {
                guard let member = team.members[t] else { throw ImError(.notMember, "\(t) is not a member") }
                try check(member.role == (adding ? .normal : .manager), "\(t) is \(member.role)", .noPermission)
            }
            for t in chosen { team.members[t]!.role = adding ? .manager : .normal }
            notify(adding ? .addManager : .removeManager, chosen, notifyExt)
        case .muteMember(let target, let muted, let notifyExt):
            let role = try requireMember()
            try checkAccount(target)
            guard let member = team.members[target] else { throw ImError(.notMember, "\(target) is not a member") }
            try check(role >= .manager && target != me && member.role < role, "\(me) cannot mute \(target)", .noPermission)
            team.members[target]!.muted = muted
            notify(.mute, [target], notifyExt, attachment: [.mute: muted ? "1" : "0"])
        case .setNotifyState(let state):
            _ = try requireMember()
            team.setNotify(state, of: me)
        case .send(let clientMessageId, let type, let body, let ext):
            let role = try requireMember()
            try check(clientMessageId.utf8.count <= limits.maxClientMessageIdBytes, "clientMessageId over \(limits.maxClientMessageIdBytes) bytes")
            try check(!body.isEmpty && body.utf8.count <= limits.maxBodyBytes, "a body is 1 to \(limits.maxBodyBytes) bytes")
            try check(ext.utf8.count <= limits.maxExtBytes, "ext over \(limits.maxExtBytes) bytes")
            // N2: notification messages are the server's alone.
            try check(!type.isEmpty && type.utf8.count <= limits.maxTypeBytes && type != "notification",
                      "a type is 1 to \(limits.maxTypeBytes) bytes, and not notification")
            let message = TeamMessage(from: me, clientMessageId: clientMessageId, type: type, body: body, ext: ext)
            if let key = TeamLogKind.message(message).resendKey, let first = team.log.resent(key) {
                outcome.messageSeq = first.seq
                return
            }
            try check(!team.members[me]!.muted, "\(me) is muted in \(teamId)", .teamMuted)
            try check(!team.info.muteAll || role >= .manager, "\(teamId) is muted", .teamMuted)
            let item = team.log.append(.message(message), at: now, limits: limits)
            // Team DND: who is not alerted (the sender's own devices never are alerted by their own message).
            let silent = team.silent(byManager: role >= .manager, also: me)
            outcome.events.append(TeamEvent(teamId: teamId, item: item, alsoTo: [], noAlert: silent))
            outcome.messageSeq = item.seq
        }
    }

    /// N2 / seed 001: a notification's notifyExt is defined only through the server API.
    private func checkNotifyExt(_ command: TeamCommand, _ context: ImContext) throws {
        let ext: String
        switch command {
        case .invite(_, _, let e), .approveApplication(_, let e), .kick(_, let e), .leave(let e), .update(_, let e),
             .dismiss(let e), .transferOwner(_, _, let e), .addManagers(_, let e), .removeManagers(_, let e),
             .muteMember(_, _, let e):
            ext = e
        default:
            ext = ""
        }
        try check(ext.utf8.count <= limits.maxNotifyExtBytes, "notifyExt over \(limits.maxNotifyExtBytes) bytes")
        try check(ext.isEmpty || context.byAppServer, "notifyExt is set only through the server API", .noPermission)
    }

    private func checkInfo(_ info: TeamInfo) throws {
        try check(!info.name.isEmpty && info.name.utf8.count <= limits.maxTeamNameBytes, "a team name is 1 to \(limits.maxTeamNameBytes) bytes")
        for text in [info.intro, info.announcement, info.avatar] {
            try check(text.utf8.count <= limits.maxTeamTextBytes, "a team text over \(limits.maxTeamTextBytes) bytes")
        }
    }

    private func set(_ info: inout TeamInfo, _ tag: TeamUpdateTag, _ value: String) throws {
        func mode<T: RawRepresentable>(_: T.Type) throws -> T where T.RawValue == UInt8 {
            guard let raw = UInt8(value), let v = T(rawValue: raw) else { throw ImError(.badParameter, "\(tag) cannot be \(value)") }
            return v
        }
        switch tag {
        case .name: info.name = value
        case .intro: info.intro = value
        case .announcement: info.announcement = value
        case .avatar: info.avatar = value
        case .joinMode: info.joinMode = try mode(TeamJoinMode.self)
        case .inviteMode: info.inviteMode = try mode(TeamPermission.self)
        case .beInviteMode: info.beInviteMode = try mode(TeamBeInviteMode.self)
        case .updateInfoMode: info.updateInfoMode = try mode(TeamPermission.self)
        case .muteMode:
            guard value == "0" || value == "1" else { throw ImError(.badParameter, "muteMode is 0 or 1") }
            info.muteAll = value == "1"
        case .mute: throw ImError(.badParameter, "mute is a member's, not the team's")
        }
    }
}
