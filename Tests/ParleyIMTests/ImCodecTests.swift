import Testing
import ParleyIM
import ParleyRaft
import ParleyWire

/// The IM commands' binary form in Raft entries: every case reads back as written; an unknown version or
/// tag, truncated or trailing bytes, and random garbage are refused with a `CodecError`, never a trap.
@Suite struct ImCodecTests {
    static let message = P2PMessage(from: "amy", to: "tom", clientMessageId: "c", type: "text", body: "b", ext: "e", receiverSeq: 9)
    static var all: [ImShardCommand] {
        var info = TeamInfo(name: "Kite")
        info.intro = "i"; info.announcement = "a"; info.avatar = "v"; info.joinMode = .rejectAll; info.inviteMode = .all
        info.beInviteMode = .noAuth; info.updateInfoMode = .all; info.muteAll = true
        let team: [TeamCommand] = [
            .create(info), .invite(targets: ["a", "b"], postscript: "p", notifyExt: "x"), .acceptInvitation, .rejectInvitation,
            .apply(message: "m"), .approveApplication(applicant: "a", notifyExt: "x"), .rejectApplication(applicant: "a"),
            .kick(targets: ["a"], notifyExt: "x"), .leave(notifyExt: "x"), .update([.name: "n", .muteMode: "1", .joinMode: "2"], notifyExt: "x"),
            .dismiss(notifyExt: "x"), .transferOwner(to: "b", leave: true, notifyExt: "x"), .addManagers(["a"], notifyExt: "x"),
            .removeManagers(["a"], notifyExt: "x"), .muteMember("a", muted: true, notifyExt: "x"), .setNotifyState(.onlyManager),
            .send(clientMessageId: "c", type: "text", body: "b", ext: "e"),
        ]
        let effects: [ImEffect.Change] = [.befriendedBy, .requestedBy(message: "m"), .acceptedBy, .rejectedBy, .unfriendedBy,
                                          .sentCopy(message), .joinedTeam("k", fromSeq: 4), .leftTeam("k"), .teamNotice(.apply, teamId: "k", message: "m")]
        return FriendOperation.allCases.map { .user(.friend($0, target: "tom", message: "hi")) }
            + [.user(.deleteFriend(target: "tom", removeRemark: true)), .user(.updateRemark(target: "tom", remark: "T")),
               .user(.setBlocked(target: "tom", true)), .user(.setMuted(target: "tom", false)),
               .send(P2PSend(to: "tom", clientMessageId: "c1", type: "image", body: "b", ext: "{}"))]
            + team.map { .team(teamId: "kite", $0) }
            + [.effects(from: 3, effects.enumerated().map { OutboxEntry(seq: UInt64($0 + 1), effect: ImEffect(target: "tom", from: "amy", change: $1, at: 77)) }),
               .screenedEffects(from: 2, [OutboxEntry(seq: 9, effect: ImEffect(target: "tom", from: "amy", change: .requestedBy(message: "m"), at: 78))]),
               .confirm([1, 5, 9]), .confirm([])]
    }

    @Test func everyCommandReadsBackAsWritten() throws {
        for command in Self.all {
            #expect(try ImShardCommand(decoding: command.encoded()) == command, "\(command)")
        }
    }

    @Test func unknownVersionsTagsTruncationAndTrailingBytesAreRefused() {
        let bytes = ImShardCommand.user(.setBlocked(target: "tom", true)).encoded()
        #expect(throws: CodecError.badVersion(2)) { try ImShardCommand(decoding: [2] + bytes.dropFirst()) }
        #expect(throws: CodecError.badTag("IM command", 99)) { try ImShardCommand(decoding: [1, 99]) }
        #expect(throws: CodecError.trailingBytes(1)) { try ImShardCommand(decoding: bytes + [0]) }
        for cut in 0..<bytes.count {
            #expect(throws: CodecError.self) { try ImShardCommand(decoding: Array(bytes.prefix(cut))) }
        }
    }

    @Test func garbageNeverTraps() {
        var rng = SplitMix64(seed: 19)
        for command in Self.all {
            let bytes = command.encoded()
            for _ in 0..<50 {
                var mutated = bytes
                let at = Int(rng.nextUInt64() % UInt64(mutated.count))
                mutated[at] = UInt8(truncatingIfNeeded: rng.nextUInt64())
                // Either refused or some command: never a trap, and what decodes encodes to a readable form.
                if let decoded = try? ImShardCommand(decoding: mutated) {
                    #expect((try? ImShardCommand(decoding: decoded.encoded())) == decoded)
                }
            }
        }
    }

    @Test func theOneApplyMatchesEachEntryPoint() {
        var a = ImShardState(), b = ImShardState()
        let context = ImContext(actor: "amy", time: 5)
        _ = a.apply(ImShardCommand.user(.friend(.request, target: "tom", message: "m")), context: context)
        _ = b.apply(ImCommand.friend(.request, target: "tom", message: "m"), context: context)
        _ = a.apply(ImShardCommand.team(teamId: "k", .create(TeamInfo(name: "K"))), context: context)
        _ = b.apply(TeamCommand.create(TeamInfo(name: "K")), team: "k", context: context)
        #expect(a == b)
        #expect(a.apply(.confirm([1, 2]), context: context) == .success(.confirmed))
        #expect(a.outbox.isEmpty)
    }
}
