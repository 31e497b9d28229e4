import ParleyIM
import ParleyRooms
import ParleyShardState
import ParleyWire
import Testing

/// Issue 38 item 3: what a team's events put on its shard's feed for the edges. An advanced team's carry its
/// member list (each edge picks its devices from it), so their cost grows with the team; a supergroup's carry
/// none — each edge delivers to the devices it checked are members — so a message costs the same whatever
/// the supergroup's size.
@Suite struct SuperTeamFeedTests {
    /// A shard holding a team of `members` members besides its owner "amy" (invitations need no consent).
    static func shard(type: TeamType, members: Int) -> (ShardState, UInt64) {
        var state = ShardState(rooms: RoomsState())
        var index: UInt64 = 0
        func team(_ actor: String, _ command: TeamCommand) {
            index += 1
            let outcome = state.apply(.im(account: actor, .team(teamId: "hall", command)),
                                      context: ApplyContext(commandIndex: index, timestamp: 1_000_000 + Int64(index), actor: .appServer))
            if case .failure(let e)? = outcome.im { Issue.record("\(command): \(e)") }
        }
        var info = TeamInfo(name: "Hall")
        info.type = type
        info.beInviteMode = .noAuth
        team("amy", .create(info))
        let names = (0..<members).map { "m\($0)" }
        for start in stride(from: 0, to: names.count, by: 200) {
            team("amy", .invite(targets: Array(names[start..<min(start + 200, names.count)]), postscript: "", notifyExt: ""))
        }
        team("m1", .setNotifyState(.none))
        _ = state.takeImFeed()
        index += 1
        _ = state.apply(.im(account: "m3", .team(teamId: "hall", .send(clientMessageId: "c", type: "text", body: "hello", ext: ""))),
                        context: ApplyContext(commandIndex: index, timestamp: 2_000_000, actor: .appServer))
        return (state, index)
    }

    @Test("001 supergroup: a message is one feed event without the member list, its size the same for 50 or 5,000 members")
    func supergroupEventLeavesMembersOut() throws {
        var sizes: [Int] = []
        for members in [50, 5_000] {
            var (state, _) = Self.shard(type: .superTeam, members: members)
            let feed = state.takeImFeed()
            #expect(feed.count == 1)
            guard case .superTeam(let e)? = feed.first else { Issue.record("not a supergroup event: \(feed)"); return }
            #expect(e.noAlert == ["m1", "m3"], "the quiet member and the sender")
            #expect(feed[0].accounts.isEmpty && e.alsoTo.isEmpty)
            var r = ByteReader(feed[0].encoded())
            #expect(try ImFeedEvent(from: &r) == feed[0])
            sizes.append(feed[0].encoded().count)
            #expect(feed[0].estimatedBytes < 512)
        }
        #expect(sizes[0] == sizes[1])
    }

    @Test("001 advanced team: its events still name every member (the edges pick their devices from the list)")
    func advancedEventNamesMembers() throws {
        var (state, _) = Self.shard(type: .advanced, members: 50)
        let feed = state.takeImFeed()
        guard case .team(_, let members)? = feed.first else { Issue.record("not a team event: \(feed)"); return }
        #expect(members.count == 51 && feed[0].accounts.count == 51)
    }
}
