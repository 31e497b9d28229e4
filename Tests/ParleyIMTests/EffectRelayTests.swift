import Testing
import ParleyIM
import ParleyRaft
import ParleyWire

/// docs/im.md "effects": what one user's command changes for another is applied on the other's shard once,
/// in order, however often the relay resends; the state survives snapshot and restore byte for byte.
@Suite struct EffectRelayTests {
    @Test("Effects: a resent or older relay changes nothing; the outbox keeps an effect until confirmed")
    func effectsApplyOnce() {
        var world = ImWorld()
        world.run("amy", .friend(.request, target: "tom", message: "1"), relay: false)
        world.run("amy", .friend(.request, target: "tom", message: "2"), relay: false)
        let source = world.shard(of: "amy"), target = world.shard(of: "tom")
        let entries = world.shards[source].outbox
        #expect(entries.map(\.seq) == [1, 2])
        let first = world.shards[target].applyEffects(from: source, entries)
        #expect(first.appliedUpTo == 2 && first.events.count == 2)
        let again = world.shards[target].applyEffects(from: source, entries)
        #expect(again.events.isEmpty && again.appliedUpTo == 2, "resent: applied once")
        #expect(world.shards[target].user("tom").incoming["amy"]?.message == "2", "in order: the newer request stands")
        #expect(world.shards[target].user("tom").log.nextSeq == 3)
        world.shards[source].confirm([1])
        #expect(world.shards[source].outbox.map(\.seq) == [2])
        world.shards[source].confirm([2])
        #expect(world.shards[source].outbox.isEmpty)
    }

    @Test("Effects: a malformed relayed effect is skipped (its sequence consumed), never applied")
    func malformedEffectsAreSkipped() {
        var state = ImShardState()
        let bad = [OutboxEntry(seq: 1, effect: ImEffect(target: "", from: "amy", change: .befriendedBy, at: 5)),
                   OutboxEntry(seq: 2, effect: ImEffect(target: "tom", from: "tom", change: .befriendedBy, at: 5))]
        let result = state.applyEffects(from: 3, bad)
        #expect(result.events.isEmpty && result.appliedUpTo == 2 && state.users.isEmpty)
    }

    @Test("Property: random commands and messages over four shards; two replicas applying the same log agree, and a replica restored from a snapshot half-way agrees too")
    func replicasAndRestoresAgree() throws {
        for seed in UInt64(1)...20 {
            var rng = SeededGenerator(seed: seed)
            let names = ["amy", "bea", "gus", "ned", "ola", "tom", "vic", "zed"]
            var world = ImWorld(shards: 4)
            var replica = ImWorld(shards: 4)
            var restored: ImWorld?
            for step in 0..<400 {
                if step == 200 {
                    var copy = ImWorld(shards: 4)
                    copy.shards = try world.shards.map { try ImShardState(restoring: $0.snapshot()) }
                    copy.time = world.time
                    #expect(copy.shards == world.shards, "seed \(seed): restore gives the same state")
                    restored = copy
                }
                let actor = names.randomElement(using: &rng)!, target = names.randomElement(using: &rng)!
                let command: ImCommand
                switch rng.next() % 7 {
                case 0: command = .friend(FriendOperation.allCases.randomElement(using: &rng)!, target: target, message: "m\(step)")
                case 1: command = .friend(.request, target: target, message: "r\(step)")
                case 2: command = .deleteFriend(target: target, removeRemark: rng.next() % 2 == 0)
                case 3: command = .updateRemark(target: target, remark: "n\(step)")
                case 4: command = .setBlocked(target: target, rng.next() % 3 != 0)
                case 5: command = .setMuted(target: target, rng.next() % 3 != 0)
                default: command = .friend(.verify, target: target, message: "")
                }
                let relay = rng.next() % 3 == 0
                if rng.next() % 4 == 0 {
                    // A team command (some refused: roles, modes, membership).
                    let teamId = ["kite", "zoo"].randomElement(using: &rng)!
                    let teamCommand: TeamCommand
                    switch rng.next() % 10 {
                    case 0: teamCommand = .create(TeamInfo(name: teamId))
                    case 1: teamCommand = .invite(targets: [target], postscript: "p", notifyExt: "")
                    case 2: teamCommand = .acceptInvitation
                    case 3: teamCommand = .apply(message: "a")
                    case 4: teamCommand = .approveApplication(applicant: target, notifyExt: "")
                    case 5: teamCommand = .kick(targets: [target], notifyExt: "")
                    case 6: teamCommand = .leave(notifyExt: "")
                    case 7: teamCommand = .update([.joinMode: "\(rng.next() % 3)", .beInviteMode: "\(rng.next() % 2)"], notifyExt: "")
                    case 8: teamCommand = rng.next() % 5 == 0 ? .dismiss(notifyExt: "") : .addManagers([target], notifyExt: "")
                    default: teamCommand = .send(clientMessageId: "t\(step % 30)", type: "text", body: "b", ext: "")
                    }
                    let a = world.team(actor, teamId, teamCommand)
                    let b = replica.team(actor, teamId, teamCommand)
                    #expect(a == b, "seed \(seed) step \(step)")
                    if restored != nil { restored!.team(actor, teamId, teamCommand) }
                    continue
                }
                if rng.next() % 4 == 0 {
                    // A one-to-one message (ids repeat: some are resends).
                    let m = P2PSend(to: target, clientMessageId: "p\(step % 40)", body: "b\(step)")
                    let a = world.send(actor, m, relay: relay)
                    let b = replica.send(actor, m, relay: relay)
                    #expect(a == b, "seed \(seed) step \(step)")
                    if restored != nil { restored!.send(actor, m, relay: relay) }
                    continue
                }
                let a = world.run(actor, command, relay: relay)
                let b = replica.run(actor, command, relay: relay)
                #expect(a == b, "seed \(seed) step \(step)")
                if restored != nil { restored!.run(actor, command, relay: relay) }
            }
            world.relay(); replica.relay(); restored!.relay()
            #expect(world.shards.map { $0.snapshot() } == replica.shards.map { $0.snapshot() }, "seed \(seed)")
            #expect(world.shards.map { $0.snapshot() } == restored!.shards.map { $0.snapshot() }, "seed \(seed)")
            // Friendship is symmetric once every effect arrived.
            for name in names {
                for friend in world.user(name).friendList {
                    #expect(world.user(friend).friends[name] != nil, "seed \(seed): \(name) → \(friend) but not back")
                }
            }
            #expect(world.shards.allSatisfy { $0.outbox.isEmpty })
            // Every user lists exactly the teams it is a member of once every effect arrived.
            for name in names {
                let member = ["kite", "zoo"].filter { world.teamRecord($0)?.members[name] != nil }
                #expect(world.user(name).teams.sorted() == member, "seed \(seed): \(name)")
            }
        }
    }

    @Test("Snapshot: garbage, a wrong magic, an unknown version or trailing bytes are refused cleanly")
    func snapshotRefusals() {
        var world = ImWorld()
        world.run("amy", .friend(.request, target: "tom", message: "x"), relay: false)
        let bytes = world.shards[world.shard(of: "amy")].snapshot()
        #expect(throws: CodecError.self) { try ImShardState(restoring: Array(bytes.dropLast())) }
        #expect(throws: CodecError.badMagic) { try ImShardState(restoring: [0, 0, 0, 0, 1]) }
        var newer = bytes
        newer[4] = 99
        #expect(throws: CodecError.badVersion(99)) { try ImShardState(restoring: newer) }
        #expect(throws: CodecError.trailingBytes(1)) { try ImShardState(restoring: bytes + [0]) }
        #expect(throws: CodecError.self) { try ImShardState(restoring: [UInt8](repeating: 0xFF, count: 64)) }
    }
}

/// A seeded generator (Raft's SplitMix64) so a failing seed reruns the same commands.
struct SeededGenerator: RandomNumberGenerator {
    var inner: SplitMix64
    init(seed: UInt64) { inner = SplitMix64(seed: seed) }
    mutating func next() -> UInt64 { inner.nextUInt64() }
}
