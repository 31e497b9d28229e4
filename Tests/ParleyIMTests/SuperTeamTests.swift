import Testing
import ParleyIM
import ParleyWire

/// Issue 38 item 3, seed 001's supergroup (`NIMSessionTypeSuperTeam`): a team of up to
/// `maxSuperTeamMembers` whose every rule is an advanced team's; what differs is the cap, how its events reach
/// the edges (tested in ParleyShardStateTests and on real nodes) and that its type is replicated.
@Suite struct SuperTeamTests {
    /// amy's supergroup "hall" (invitations need no consent), with `count` members besides amy: "m0000" ….
    func hall(members count: Int, limits: ImLimits = ImLimits()) -> ImWorld {
        var world = ImWorld(shards: 2, limits: limits)
        var info = TeamInfo(name: "Hall")
        info.type = .superTeam
        info.beInviteMode = .noAuth
        world.team("amy", "hall", .create(info))
        let names = (0..<count).map { n in "m" + String(String(10_000 + n).dropFirst()) }
        for start in stride(from: 0, to: names.count, by: 200) {
            world.team("amy", "hall", .invite(targets: Array(names[start..<min(start + 200, names.count)]), postscript: "", notifyExt: ""))
        }
        world.teamHeard = []
        return world
    }

    @Test("001 supergroup: holds up to 10,000 members where an advanced team stops at 2,000 (14216 teamFull, nothing changed)")
    func memberCap() throws {
        var limits = ImLimits()
        limits.maxTeamMembers = 20
        limits.maxSuperTeamMembers = 50
        var world = hall(members: 49, limits: limits)
        #expect(world.teamRecord("hall")?.members.count == 50)
        let before = world.shards.map { $0.snapshot() }
        #expect(world.team("amy", "hall", .invite(targets: ["zed"], postscript: "", notifyExt: "")).failureCode == .teamFull)
        #expect(world.shards.map { $0.snapshot() } == before, "a refused invite changes nothing")

        var advanced = TeamInfo(name: "Kite")
        advanced.beInviteMode = .noAuth
        world.team("amy", "kite", .create(advanced))
        let twenty = (0..<20).map { "k\($0)" }
        #expect(world.team("amy", "kite", .invite(targets: twenty, postscript: "", notifyExt: "")).failureCode == .teamFull,
                "an advanced team keeps its own cap")
        #expect(ImLimits().maxMembers(of: .superTeam) == 10_000 && ImLimits().maxMembers(of: .advanced) == 2_000)
    }

    @Test("001 supergroup: 5,000 members; a message's noAlert names only the quiet members and the sender, as for an advanced team")
    func quietMembers() throws {
        var world = hall(members: 4_999)
        world.team("m0007", "hall", .setNotifyState(.none))
        world.team("m0042", "hall", .setNotifyState(.onlyManager))
        world.team("m0100", "hall", .setNotifyState(.onlyManager))
        world.team("m0100", "hall", .setNotifyState(.all))
        let sent = try world.team("m0003", "hall", .send(clientMessageId: "c", type: "text", body: "hi", ext: "")).get()
        #expect(sent.events.first?.noAlert == ["m0003", "m0007", "m0042"])
        let byOwner = try world.team("amy", "hall", .send(clientMessageId: "o", type: "text", body: "hi", ext: "")).get()
        #expect(byOwner.events.first?.noAlert == ["amy", "m0007"], "onlyManager is alerted by the owner")
        world.team("amy", "hall", .kick(targets: ["m0007"], notifyExt: ""))
        let afterKick = try world.team("m0003", "hall", .send(clientMessageId: "d", type: "text", body: "hi", ext: "")).get()
        #expect(afterKick.events.first?.noAlert == ["m0003", "m0042"], "a kicked member is no longer quiet")
    }

    @Test("001 supergroup: the type survives snapshot and restore (version 3) and the quiet members are derived again; a state without one keeps its earlier bytes")
    func snapshot() throws {
        var world = hall(members: 10)
        world.team("m0001", "hall", .setNotifyState(.none))
        let shard = world.shard(of: "hall")
        let bytes = world.shards[shard].snapshot()
        #expect(bytes[4] == 3)
        let restored = try ImShardState(restoring: bytes)
        #expect(restored == world.shards[shard] && restored.snapshot() == bytes)
        #expect(restored.team("hall")?.info.type == .superTeam)
        // Equality covers the derived quiet members too: a restore that forgot them would differ.

        var plain = ImWorld(shards: 1)
        plain.team("amy", "kite", .create(TeamInfo(name: "Kite")))
        #expect(plain.shards[0].snapshot()[4] == 1, "no supergroup, no read position: version 1 as before")
    }

    @Test("001 supergroup: the create has its own tag (18), an advanced team's keeps tag 1; a team view of a supergroup says so")
    func codec() throws {
        var info = TeamInfo(name: "Hall")
        info.type = .superTeam
        for command in [ImShardCommand.team(teamId: "hall", .create(info)), .team(teamId: "kite", .create(TeamInfo(name: "Kite")))] {
            let bytes = command.encoded()
            #expect(try ImShardCommand(decoding: bytes) == command)
        }
        let world = hall(members: 3)
        let view = try world.shards[world.shard(of: "hall")]
            .read(.team(teamId: "hall", after: 0, limit: 10), context: ImContext(actor: "amy", time: 0)).get()
        #expect(roundTrip(.read(view)))
        guard case .team(let v) = view else { Issue.record("not a team view"); return }
        #expect(v.info.type == .superTeam && v.members.count == 4)
    }

    @Test("Issue 38: teamLog reads a team's info and items as team does, without the member list; members only")
    func teamLogLeavesMembersOut() throws {
        var world = hall(members: 30)
        world.team("amy", "hall", .send(clientMessageId: "c", type: "text", body: "hi", ext: ""))
        let s = world.shard(of: "hall")
        let context = ImContext(actor: "m0003", time: 0)
        let full = try world.shards[s].read(.team(teamId: "hall", after: 0, limit: 500), context: context).get()
        let log = try world.shards[s].read(.teamLog(teamId: "hall", after: 0, limit: 500), context: context).get()
        guard case .team(var f) = full, case .team(let l) = log else { Issue.record("not team views"); return }
        #expect(f.members.count == 31 && l.members.isEmpty && !l.items.isEmpty)
        f.members = []
        #expect(f == l, "everything else the same")
        #expect(world.shards[s].read(.teamLog(teamId: "hall", after: 0, limit: 5), context: ImContext(actor: "zed", time: 0))
            .failureCode == .notMember)
        let command = ImShardCommand.read(.teamLog(teamId: "hall", after: 3, limit: 5))
        #expect(try ImShardCommand(decoding: command.encoded()) == command)
        #expect(roundTrip(.read(log)))
    }

    @Test("Issue 38: memberships answers the teams the reader is in, with type and next sequence; others are left out")
    func memberships() throws {
        var world = hall(members: 3)
        world.team("amy", "kite", .create(TeamInfo(name: "Kite")))
        let s = world.shard(of: "hall")
        #expect(world.shard(of: "kite") == s)
        let read = { (actor: String) in
            try world.shards[s].read(.memberships(teamIds: ["kite", "hall", "gone"]), context: ImContext(actor: actor, time: 0)).get()
        }
        let nextSeq = world.teamRecord("hall")!.log.nextSeq
        #expect(try read("amy") == .memberships([TeamMembership(teamId: "hall", type: .superTeam, nextSeq: nextSeq),
                                                 TeamMembership(teamId: "kite", type: .advanced, nextSeq: 1)]))
        #expect(try read("m0001") == .memberships([TeamMembership(teamId: "hall", type: .superTeam, nextSeq: nextSeq)]))
        #expect(try read("zed") == .memberships([]))
        let command = ImShardCommand.read(.memberships(teamIds: ["hall"]))
        #expect(try ImShardCommand(decoding: command.encoded()) == command)
        #expect(roundTrip(.read(try read("amy"))))
        let tooMany = (0...ImShardState.maxSummaryTeams).map { "t\($0)" }
        #expect(world.shards[s].read(.memberships(teamIds: tooMany), context: ImContext(actor: "amy", time: 0)).failureCode == .badParameter)
    }

    /// Whether an answer decodes as it was written (what a node passing a proposal on sends back).
    func roundTrip(_ applied: ImApplied) -> Bool {
        var w = ByteWriter()
        ImAnswerCodec.write(.success(applied), into: &w)
        var r = ByteReader(w.bytes)
        return (try? ImAnswerCodec.read(&r)) == .success(applied)
    }
}
