import Testing
import ParleyIM

/// Seed 001 (team messaging, team notification messages, team do-not-disturb) and the role rules the seed
/// implies. The team "kite" lives on one shard, its members on others: membership reaches them as effects.
@Suite struct TeamTests {
    /// amy owns "kite" (invitations need no consent there), with bea a manager and ned, tom normal members.
    func kite(beInvite: TeamBeInviteMode = .noAuth) -> ImWorld {
        var world = ImWorld(shards: 3)
        world.team("amy", "kite", .create(TeamInfo(name: "Kite")))
        world.team("amy", "kite", .update([.beInviteMode: "\(beInvite.rawValue)"], notifyExt: ""))
        if beInvite == .noAuth {
            world.team("amy", "kite", .invite(targets: ["bea", "ned", "tom"], postscript: "", notifyExt: ""))
            world.team("amy", "kite", .addManagers(["bea"], notifyExt: ""))
        }
        world.teamHeard = []
        return world
    }

    @Test("001 Invite (be-invite mode noAuth): members join at once; Invite notification with source and targets; their user records list the team")
    func inviteWithoutConsent() {
        var world = ImWorld(shards: 3)
        world.team("amy", "kite", .create(TeamInfo(name: "Kite")))
        world.team("amy", "kite", .update([.beInviteMode: "1"], notifyExt: ""))
        world.team("amy", "kite", .invite(targets: ["tom", "ned"], postscript: "", notifyExt: ""))
        #expect(world.teamRecord("kite")?.memberList == ["amy", "ned", "tom"])
        #expect(world.teamNotes("kite").last == TeamNotification(operation: .invite, source: "amy", targets: ["ned", "tom"], notifyExt: "", attachment: [:]))
        #expect(world.user("tom").teams == ["kite"] && world.user("amy").teams == ["kite"])
    }

    @Test("001 Invite (needAuth) then AcceptInvitation: the invitee gets a team invite notice; accepting makes it a member with an AcceptInvitation notification; rejecting tells the inviter")
    func inviteWithConsent() {
        var world = kite(beInvite: .needAuth)
        world.team("amy", "kite", .invite(targets: ["tom", "ned"], postscript: "join us", notifyExt: ""))
        #expect(world.teamRecord("kite")?.memberList == ["amy"], "no one joined yet")
        #expect(world.items(of: "tom").map(\.kind) == [.teamNotice(.invite, teamId: "kite", source: "amy", message: "join us")])
        world.team("tom", "kite", .acceptInvitation)
        #expect(world.teamRecord("kite")?.memberList == ["amy", "tom"] && world.user("tom").teams == ["kite"])
        #expect(world.teamNotes("kite").last?.operation == .acceptInvitation && world.teamNotes("kite").last?.source == "tom")
        world.team("ned", "kite", .rejectInvitation)
        #expect(world.items(of: "amy").map(\.kind) == [.teamNotice(.invitationRejected, teamId: "kite", source: "ned", message: "")])
        #expect(world.team("ned", "kite", .acceptInvitation).failureCode == .noInvitation)
    }

    @Test("001 Apply: join mode noAuth joins at once (ApplyPass); needAuth waits for a manager (ApplyPass, or a rejection notice); rejectAll refuses")
    func applications() {
        var world = kite()
        world.team("amy", "kite", .update([.joinMode: "\(TeamJoinMode.noAuth.rawValue)"], notifyExt: ""))
        world.team("zed", "kite", .apply(message: "me"))
        #expect(world.teamRecord("kite")?.members["zed"]?.role == .normal)
        #expect(world.teamNotes("kite").last?.operation == .applyPass)
        world.team("amy", "kite", .update([.joinMode: "\(TeamJoinMode.needAuth.rawValue)"], notifyExt: ""))
        world.team("gus", "kite", .apply(message: "please"))
        #expect(world.teamRecord("kite")?.members["gus"] == nil)
        // The owner and the manager are told.
        #expect(world.items(of: "amy").contains { $0.kind == .teamNotice(.apply, teamId: "kite", source: "gus", message: "please") })
        #expect(world.items(of: "bea").contains { $0.kind == .teamNotice(.apply, teamId: "kite", source: "gus", message: "please") })
        #expect(world.team("ned", "kite", .approveApplication(applicant: "gus", notifyExt: "")).failureCode == .noPermission)
        world.team("bea", "kite", .approveApplication(applicant: "gus", notifyExt: ""))
        #expect(world.teamRecord("kite")?.members["gus"] != nil && world.teamNotes("kite").last?.targets == ["gus"])
        world.team("olga", "kite", .apply(message: ""))
        world.team("amy", "kite", .rejectApplication(applicant: "olga"))
        #expect(world.items(of: "olga").map(\.kind) == [.teamNotice(.applicationRejected, teamId: "kite", source: "amy", message: "")])
        world.team("amy", "kite", .update([.joinMode: "\(TeamJoinMode.rejectAll.rawValue)"], notifyExt: ""))
        #expect(world.team("vic", "kite", .apply(message: "")).failureCode == .applicationsRejected)
    }

    @Test("001 Kick: the owner kicks anyone, a manager only normal members; the kicked hear the Kick notification and lose the team")
    func kickRules() {
        var world = kite()
        #expect(world.team("ned", "kite", .kick(targets: ["tom"], notifyExt: "")).failureCode == .noPermission, "a normal member")
        #expect(world.team("bea", "kite", .kick(targets: ["amy"], notifyExt: "")).failureCode == .noPermission, "a manager, the owner")
        world.team("bea", "kite", .kick(targets: ["tom"], notifyExt: ""))
        #expect(world.teamRecord("kite")?.members["tom"] == nil && world.user("tom").teams.isEmpty)
        let kick = world.teamHeard.last!
        #expect(kick.alsoTo == ["tom"])
        #expect(world.teamNotes("kite").last == TeamNotification(operation: .kick, source: "bea", targets: ["tom"], notifyExt: "", attachment: [:]))
        world.team("amy", "kite", .kick(targets: ["bea"], notifyExt: ""))
        #expect(world.teamRecord("kite")?.members["bea"] == nil)
        #expect(world.team("amy", "kite", .kick(targets: ["amy"], notifyExt: "")).failureCode == .noPermission)
    }

    @Test("001 Leave: a member leaves with a Leave notification; the owner cannot (transfer or dismiss first)")
    func leave() {
        var world = kite()
        world.team("tom", "kite", .leave(notifyExt: ""))
        #expect(world.teamNotes("kite").last?.operation == .leave && world.user("tom").teams.isEmpty)
        #expect(world.team("amy", "kite", .leave(notifyExt: "")).failureCode == .noPermission)
        #expect(world.team("tom", "kite", .leave(notifyExt: "")).failureCode == .notMember)
    }

    @Test("001 Update: the changed fields are the attachment (mute-all too); the update-info mode decides who edits; modes stay with managers")
    func update() {
        var world = kite()
        #expect(world.team("ned", "kite", .update([.name: "N"], notifyExt: "")).failureCode == .noPermission)
        world.team("bea", "kite", .update([.name: "Kite 2", .announcement: "hi"], notifyExt: ""))
        #expect(world.teamRecord("kite")?.info.name == "Kite 2")
        #expect(world.teamNotes("kite").last?.attachment == [.name: "Kite 2", .announcement: "hi"])
        world.team("amy", "kite", .update([.updateInfoMode: "1"], notifyExt: ""))
        world.team("ned", "kite", .update([.intro: "anyone edits"], notifyExt: ""))
        #expect(world.teamRecord("kite")?.info.intro == "anyone edits")
        #expect(world.team("ned", "kite", .update([.muteMode: "1"], notifyExt: "")).failureCode == .noPermission)
        world.team("amy", "kite", .update([.muteMode: "1"], notifyExt: ""))
        #expect(world.teamNotes("kite").last?.attachment == [.muteMode: "1"] && world.teamRecord("kite")?.info.muteAll == true)
        #expect(world.team("amy", "kite", .update([.joinMode: "9"], notifyExt: "")).failureCode == .badParameter)
        #expect(world.team("amy", "kite", .update([.name: ""], notifyExt: "")).failureCode == .badParameter)
    }

    @Test("001 TransferOwner, AddManager, RemoveManager: only the owner; each with its notification")
    func ownerOperations() {
        var world = kite()
        #expect(world.team("bea", "kite", .addManagers(["ned"], notifyExt: "")).failureCode == .noPermission)
        world.team("amy", "kite", .addManagers(["ned"], notifyExt: ""))
        #expect(world.teamRecord("kite")?.members["ned"]?.role == .manager && world.teamNotes("kite").last?.operation == .addManager)
        world.team("amy", "kite", .removeManagers(["ned"], notifyExt: ""))
        #expect(world.teamRecord("kite")?.members["ned"]?.role == .normal && world.teamNotes("kite").last?.operation == .removeManager)
        #expect(world.team("bea", "kite", .transferOwner(to: "tom", leave: false, notifyExt: "")).failureCode == .noPermission)
        world.team("amy", "kite", .transferOwner(to: "tom", leave: true, notifyExt: ""))
        let team = world.teamRecord("kite")!
        #expect(team.owner == "tom" && team.members["tom"]?.role == .owner && team.members["amy"] == nil)
        #expect(world.teamNotes("kite").suffix(2).map(\.operation) == [.transferOwner, .leave])
    }

    @Test("001 Mute: managers mute normal members (Mute notification, attachment mute 1/0); a muted member and, under mute-all, every normal member cannot send")
    func muting() {
        var world = kite()
        #expect(world.team("bea", "kite", .muteMember("amy", muted: true, notifyExt: "")).failureCode == .noPermission)
        world.team("bea", "kite", .muteMember("tom", muted: true, notifyExt: ""))
        #expect(world.teamNotes("kite").last == TeamNotification(operation: .mute, source: "bea", targets: ["tom"], notifyExt: "", attachment: [.mute: "1"]))
        #expect(world.team("tom", "kite", .send(clientMessageId: "t1", type: "text", body: "hi", ext: "")).failureCode == .teamMuted)
        world.team("amy", "kite", .update([.muteMode: "1"], notifyExt: ""))
        #expect(world.team("ned", "kite", .send(clientMessageId: "n1", type: "text", body: "hi", ext: "")).failureCode == .teamMuted)
        #expect(world.team("bea", "kite", .send(clientMessageId: "b1", type: "text", body: "hi", ext: "")).failureCode == nil, "managers still send")
    }

    @Test("001 Dismiss: only the owner; every member hears Dismiss and loses the team; the team is gone")
    func dismiss() {
        var world = kite()
        #expect(world.team("bea", "kite", .dismiss(notifyExt: "")).failureCode == .noPermission)
        world.team("amy", "kite", .dismiss(notifyExt: ""))
        #expect(world.teamRecord("kite") == nil)
        #expect(world.teamHeard.last?.alsoTo == ["amy", "bea", "ned", "tom"] && world.teamNotes("kite").last?.operation == .dismiss)
        #expect(["amy", "bea", "ned", "tom"].allSatisfy { world.user($0).teams.isEmpty })
        #expect(world.team("amy", "kite", .send(clientMessageId: "", type: "text", body: "x", ext: "")).failureCode == .noSuchTeam)
    }

    @Test("001 notifyExt: set only through the server API (a client's is refused, changing nothing); carried in the notification")
    func notifyExtOnlyFromTheServer() {
        var world = kite()
        let before = world.shards.map { $0.snapshot() }
        #expect(world.team("amy", "kite", .kick(targets: ["tom"], notifyExt: "why")).failureCode == .noPermission)
        #expect(world.shards.map { $0.snapshot() } == before)
        world.team("amy", "kite", .kick(targets: ["tom"], notifyExt: "why"), server: true)
        #expect(world.teamNotes("kite").last?.notifyExt == "why")
    }

    @Test("001 Team DND: All alerts, OnlyManager alerts only for the owner's and managers' messages, None never; delivery and the log are the same")
    func teamDoNotDisturb() throws {
        var world = kite()
        world.team("ned", "kite", .setNotifyState(.none))
        world.team("tom", "kite", .setNotifyState(.onlyManager))
        let fromNormal = try world.team("ned", "kite", .send(clientMessageId: "n1", type: "text", body: "hi", ext: "")).get()
        #expect(fromNormal.events.first?.noAlert == ["ned", "tom"], "the sender itself, ned (None), tom (OnlyManager, a normal sender)")
        let fromManager = try world.team("bea", "kite", .send(clientMessageId: "b1", type: "text", body: "hi", ext: "")).get()
        #expect(fromManager.events.first?.noAlert == ["bea", "ned"])
        let messages = world.teamRecord("kite")!.log.entries.filter { if case .message = $0.kind { true } else { false } }
        #expect(messages.count == 2, "both stored for everyone")
    }

    /// Issue 38 item 1: seed 001's notify states cover team notifications too — None alerts for no
    /// notification, OnlyManager only for the owner's and managers' (the operator's role when it acted).
    @Test("001 Team DND on notifications: None never alerts, OnlyManager only for a manager's or the owner's")
    func teamDoNotDisturbCoversNotifications() throws {
        var world = kite()
        world.team("ned", "kite", .setNotifyState(.none))
        world.team("tom", "kite", .setNotifyState(.onlyManager))
        let byManager = try world.team("bea", "kite", .update([.name: "Kite 2"], notifyExt: "")).get()
        #expect(byManager.events.first?.noAlert == ["ned"], "ned (None); tom (OnlyManager) is alerted by a manager")
        let byOwner = try world.team("amy", "kite", .update([.name: "Kite 3"], notifyExt: "")).get()
        #expect(byOwner.events.first?.noAlert == ["ned"])
        let byNormal = try world.team("ned", "kite", .leave(notifyExt: "")).get()
        #expect(byNormal.events.first?.noAlert == ["tom"], "tom (OnlyManager) is not alerted by a normal member's leave")
        world.team("tom", "kite", .setNotifyState(.all))
        let allAgain = try world.team("bea", "kite", .update([.name: "Kite 4"], notifyExt: "")).get()
        #expect(allAgain.events.first?.noAlert == [])
    }

    @Test("Team messages: sequence per team, resend answered once, N2 no client notifications, bad input 414 byte-identical")
    func teamMessages() throws {
        var world = kite()
        let first = try world.team("tom", "kite", .send(clientMessageId: "t1", type: "text", body: "one", ext: "")).get()
        let again = try world.team("tom", "kite", .send(clientMessageId: "t1", type: "text", body: "one", ext: "")).get()
        #expect(again.messageSeq == first.messageSeq && again.events.isEmpty)
        let before = world.shards.map { $0.snapshot() }
        let bad: [(String, String, TeamCommand)] = [
            ("tom", "kite", .send(clientMessageId: "x", type: "notification", body: "fake", ext: "")),
            ("tom", "kite", .send(clientMessageId: "x", type: "text", body: "", ext: "")),
            ("tom", "", .send(clientMessageId: "x", type: "text", body: "b", ext: "")),
            ("", "kite", .leave(notifyExt: "")),
            ("amy", "kite", .invite(targets: [], postscript: "", notifyExt: "")),
            ("amy", "kite", .update([.name: String(repeating: "n", count: 65)], notifyExt: "")),
            ("amy", "kite2", .create(TeamInfo(name: ""))),
        ]
        for (actor, teamId, command) in bad { #expect(world.team(actor, teamId, command).failureCode == .badParameter, "\(command)") }
        #expect(world.team("zed", "kite", .send(clientMessageId: "z", type: "text", body: "b", ext: "")).failureCode == .notMember)
        #expect(world.team("amy", "kite", .create(TeamInfo(name: "again"))).failureCode == .teamExists)
        #expect(world.shards.map { $0.snapshot() } == before)
    }

    @Test("Teams survive snapshot and restore byte for byte")
    func snapshot() throws {
        var world = kite(beInvite: .needAuth)
        world.team("amy", "kite", .invite(targets: ["zed"], postscript: "p", notifyExt: ""))
        world.team("gus", "kite", .apply(message: "m"))
        world.team("amy", "kite", .send(clientMessageId: "a1", type: "text", body: "hello", ext: "e"))
        world.team("amy", "kite", .update([.name: "K", .muteMode: "1"], notifyExt: "x"), server: true)
        for shard in world.shards {
            let restored = try ImShardState(restoring: shard.snapshot())
            #expect(restored == shard && restored.snapshot() == shard.snapshot())
        }
    }
}
