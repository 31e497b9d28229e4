import Foundation
import ParleyCluster
import ParleyHost
import ParleyIM
import ParleyRaft
import ParleyRooms
import ParleyWire
import Testing
import ParleyShardState
import ParleyPlacement
import ParleyTransport

/// Issue 19: IM commands in the shards' Raft groups beside the rooms (docs/im.md) — replicated, snapshotted,
/// in the event feed, and the relay's effects applied once; the wire forms read back.
@Suite struct ShardImTests {
    let app = "app"
    func scoped(_ a: String) -> String { AppScope.scoped(a, in: app) }

    /// Proposes an IM command through the shard's leader and runs the cluster until it applied there.
    func submitIm(_ c: InProcessCluster, _ command: ImShardCommand, account: String, shard: ShardID,
                  as actor: CommandActor = .appServer) throws -> Result<ImApplied, ImError> {
        try c.run(until: { c.leader(of: shard) != nil }, "a leader for shard \(shard)")
        var answer: Result<ShardOutcome, ClusterError>?
        c.hosts[c.leader(of: shard)!]!.propose(.im(account: account, command), shard: shard, actor: actor, timestamp: c.clock) { answer = $0 }
        try c.run(until: { answer != nil }, "the IM proposal to apply")
        return try #require(try answer!.get().im)
    }

    /// Two users on two shards (found by name, so the test does not depend on the hash).
    func usersOnTwoShards(_ c: InProcessCluster) -> (String, String) {
        let a = scoped("alice")
        let b = (0..<100).map { scoped("bob\($0)") }.first { c.shardMap.shard(ofUser: $0) != c.shardMap.shard(ofUser: a) }!
        return (a, b)
    }

    @Test func aFriendRequestAppliesOnTheRequestersShardAndItsEffectOnceOnTheTargets() throws {
        let c = try InProcessCluster()
        let (a, b) = usersOnTwoShards(c)
        let sa = c.shardMap.shard(ofUser: a), sb = c.shardMap.shard(ofUser: b)
        let asked = try submitIm(c, .user(.friend(.request, target: b, message: "hi")), account: a, shard: sa)
        #expect(asked == .success(.user([])))
        // The effect waits in A's shard's outbox on every replica.
        let leaderA = c.hosts[c.leader(of: sa)!]!
        var outbox = try #require(leaderA.imOutbox(shard: sa))
        #expect(outbox.count == 1 && outbox[0].effect.target == b)
        // The relay, by hand (the driver does this): effects to B's shard, twice (a resend), then confirm.
        let first = try submitIm(c, .effects(from: sa, outbox), account: "", shard: sb)
        let again = try submitIm(c, .effects(from: sa, outbox), account: "", shard: sb)
        guard case .success(.effects(let events, let upTo)) = first, case .success(.effects(let none, let upTo2)) = again else {
            Issue.record("\(first) \(again)"); return
        }
        #expect(upTo == 1 && upTo2 == 1 && none.isEmpty, "a resent relay changes nothing")
        #expect(events.count == 1 && events[0].account == b)
        let relations = try submitIm(c, .read(.relations), account: b, shard: sb)
        guard case .success(.read(.relations(let r))) = relations else { Issue.record("\(relations)"); return }
        #expect(r.incoming.map(\.account) == [a] && r.incoming[0].message == "hi")
        // B's shard's feed carries the FriendAdd notification for B's devices, after the room events' bytes.
        let page = try #require(c.hosts[c.leader(of: sb)!]!.eventPage(shard: sb, after: 0))
        let im = page.batches.flatMap(\.im)
        #expect(im.count == 1 && im[0].accounts == [b])
        let decoded = try ShardEventPage(decoding: page.encoded())
        #expect(decoded.batches.flatMap(\.im) == im)
        _ = try submitIm(c, .confirm(outbox.map(\.seq)), account: "", shard: sa)
        outbox = leaderA.imOutbox(shard: sa) ?? []
        #expect(outbox.isEmpty)
        try c.run(until: { c.replicasAgree(on: sa) && c.replicasAgree(on: sb) }, "replicas to agree")
    }

    @Test func aSessionActsOnlyForItsOwnUserAndNeverRelays() throws {
        let c = try InProcessCluster()
        let (a, b) = usersOnTwoShards(c)
        let sa = c.shardMap.shard(ofUser: a)
        let before = try #require(c.hosts[1]!.roomsSnapshot(shard: sa))
        let forged = try submitIm(c, .user(.setBlocked(target: b, true)), account: a, shard: sa, as: session(b))
        #expect(forged.failureCode == .noPermission)
        let relay = try submitIm(c, .effects(from: 9, []), account: a, shard: sa, as: session(a))
        #expect(relay.failureCode == .noPermission)
        try c.run(until: { c.replicasAgree(on: sa) }, "replicas to agree")
        #expect(c.hosts[1]!.roomsSnapshot(shard: sa) == before, "refused commands change nothing")
        let own = try submitIm(c, .user(.setBlocked(target: b, true)), account: a, shard: sa, as: session(a))
        #expect(own == .success(.user([ImEvent(account: a, kind: .blocklistChanged)])))
    }

    @Test func imStateSurvivesRestartsAndSnapshotsAndAShardWithoutItSnapshotsAsBefore() throws {
        let c = try InProcessCluster(shards: 2)
        c.snapshotEvery = 5
        try c.restartAll()
        let (a, b) = usersOnTwoShards(c)
        let sb = c.shardMap.shard(ofUser: b)
        // A shard without IM state writes the rooms' snapshot byte for byte (nodes of the previous release read it).
        try c.submit(.createRoom(CreateRoom(roomId: "r", creator: "u", name: "R")), room: "r")
        let rs = c.shardMap.shard(ofRoom: "r")
        let plain = try #require(c.hosts[1]!.roomsSnapshot(shard: rs))
        if rs != sb { #expect(Array(plain.prefix(4)) == Array("PRMS".utf8)) }
        for i in 0..<12 {
            let sent = try submitIm(c, .send(P2PSend(to: b, clientMessageId: "m\(i)", body: "hello \(i)")), account: a, shard: sb)
            guard case .success(.sent(let s)) = sent else { Issue.record("\(sent)"); return }
            #expect(s.seq == UInt64(i + 1))
        }
        let snap = try #require(c.hosts[1]!.roomsSnapshot(shard: sb))
        #expect(Array(snap.prefix(4)) == Array("PSHS".utf8))
        let restored = try ShardState(restoring: snap)
        #expect(restored.snapshot() == snap)
        // Every node restarts from its snapshot plus log: the log still holds all twelve, in order.
        try c.restartAll()
        let log = try submitIm(c, .read(.log(after: 0, limit: 100)), account: b, shard: sb)
        guard case .success(.read(.log(let items, let next, let first))) = log else { Issue.record("\(log)"); return }
        #expect(first == 1)
        #expect(items.map(\.seq) == Array(1...12) && next == 13)
        try c.run(until: { c.replicasAgree(on: sb) }, "replicas to agree")
    }

    @Test func shardCommandsAndOutcomesKeepTheRoomBytesAndRefuseGarbage() throws {
        let room = RoomCommand.fetchRoomInfo(roomId: "r")
        #expect(ShardCommand.room(room).encoded() == room.encoded(), "room entries read as before")
        let im = ShardCommand.im(account: "a", .user(.friend(.add, target: "b", message: "")))
        #expect(try ShardCommand(decoding: im.encoded()) == im)
        let outcome = ApplyOutcome(result: .success(.done), events: [])
        #expect(ShardOutcome.room(outcome).encoded() == outcome.encoded())
        let answers: [Result<ImApplied, ImError>] = [
            .failure(ImError(.blocked, "no")), .success(.confirmed), .success(.user([ImEvent(account: "a", kind: .muteListChanged)])),
            .success(.read(.log(items: [ImLogItem(seq: 3, time: 9, kind: .friendNotification(source: "a", target: "b", operation: .verify,
                                                                                                 message: "m"))], nextSeq: 4, firstSeq: 2))),
        ]
        for a in answers {
            #expect(try ShardOutcome(decoding: ShardOutcome.im(a).encoded()) == .im(a))
        }
        var bytes = im.encoded()
        for cut in 1..<bytes.count { #expect(throws: CodecError.self) { try ShardCommand(decoding: Array(bytes.prefix(cut))) } }
        bytes[bytes.count - 1] = 0xFF
        #expect((try? ShardCommand(decoding: bytes + [1])) == nil)
        let forwarded = ShardRequest(shard: 3, actor: session("a"), command: .im(account: "a", .read(.relations)),
                                     requestKey: RequestKey(id: "k n", expiresAt: 5))
        #expect(try ShardRequest(decoding: forwarded.encoded()) == forwarded)
        #expect(try ShardRequest(legacyImBody: try #require(forwarded.legacyImBody())) == forwarded)
    }
}

extension ShardImTests {
    /// Issue 34 (peer protocol 16): the one request into a shard keeps the forms older nodes read — a room
    /// command's is the `/rpc/v1/propose` body it always was, an IM command's legacy form is
    /// `/rpc/v1/im/propose`'s — and a room outcome's answer reads as `ApplyOutcome`'s did.
    @Test func theShardRequestKeepsTheFormsOlderNodesRead() throws {
        let key = RequestKey(id: "k n", expiresAt: 5)
        let command = RoomCommand.sendMessage(SendMessage(roomId: "r", clientMessageId: "c", body: "hi"))
        for requestKey in [nil, key] {
            // The room form of protocol 1 to 15: shard, context, command, the key last when there is one.
            var old = ByteWriter()
            old.write(7)
            old.write(ApplyContext(commandIndex: 0, timestamp: 0, actor: session("a")))
            old.write(command)
            if let requestKey { old.write(requestKey) }
            let room = ShardRequest.room(shard: 7, actor: session("a"), command: command, requestKey: requestKey)
            #expect(room.encoded() == old.bytes)
            #expect(try ShardRequest(decoding: old.bytes) == room)
            #expect(room.legacyImBody() == nil)
            // The IM call's form of protocol 3 to 15: shard, context, account, the command's bytes, an optional key.
            let im = ImShardCommand.user(.setBlocked(target: "b", true))
            var legacy = ByteWriter()
            legacy.write(7)
            legacy.write(ApplyContext(commandIndex: 0, timestamp: 0, actor: session("a")))
            legacy.write("a")
            legacy.write(bytes: im.encoded())
            legacy.write(requestKey)
            let imRequest = ShardRequest(shard: 7, actor: session("a"), command: .im(account: "a", im), requestKey: requestKey)
            #expect(imRequest.legacyImBody() == legacy.bytes)
            #expect(try ShardRequest(legacyImBody: legacy.bytes) == imRequest)
            #expect(try ShardRequest(decoding: imRequest.encoded()) == imRequest)
        }
        // A room outcome's answer reads as the `ApplyOutcome` answer older callers decode: byte for byte for a
        // caller before protocol 7, the compact form (the ids) from 7 on.
        let sent = ApplyOutcome(result: .success(.messageSent(seq: 4, time: 9, serverId: 77)), events: [])
        #expect(ShardAnswer.applied(.room(sent)).encoded(forCaller: 6) == GroupAnswer<ApplyOutcome>.applied(sent).encoded())
        let compact = ShardAnswer.applied(.room(sent)).encoded(forCaller: PeerProtocol.version)
        guard case .applied(let outcome) = try GroupAnswer<ApplyOutcome>(decoding: compact) else {
            Issue.record("not an applied answer")
            return
        }
        #expect(outcome.result == sent.result)
    }
}

extension Result where Failure == ImError {
    var failureCode: ImErrorCode? {
        if case .failure(let e) = self { return e.code }
        return nil
    }
}

extension ShardImTests {
    /// SPEC A7 with issue 34's one request: an IM command whose server-API request applied already is refused
    /// by the group before it applies, with the room outcome every refused key gets, and a caller of the one
    /// road reads that as IM's own 10406 (`ShardOutcome.imAnswer`); the state changed once. A room command
    /// reads its outcome as it is (`roomAnswer`), and an answer that is neither reads as a refusal, never as
    /// success.
    @Test func A7_anImCommandsReplayedRequestKeyReadsAsTheImRefusal() throws {
        let c = try InProcessCluster()
        let (a, b) = usersOnTwoShards(c)
        let shard = c.shardMap.shard(ofUser: a)
        try c.run(until: { c.leader(of: shard) != nil }, "a leader for shard \(shard)")
        let key = RequestKey(id: "app\u{1F}nonce-im#s\(shard)#1", expiresAt: Int64.max)
        func propose(_ command: ImShardCommand) throws -> ShardOutcome {
            var answer: Result<ShardOutcome, ClusterError>?
            c.hosts[c.leader(of: shard)!]!.propose(.im(account: a, command), shard: shard, actor: .appServer,
                                                   timestamp: c.clock, requestKey: key) { answer = $0 }
            try c.run(until: { answer != nil }, "the IM proposal to apply")
            return try answer!.get()
        }
        #expect(try propose(.user(.friend(.request, target: b, message: "once"))).imAnswer == .success(.user([])))
        let replayed = try propose(.user(.friend(.request, target: b, message: "twice")))
        #expect(replayed.im == nil, "refused before applying: \(replayed)")
        guard case .failure(let error) = replayed.imAnswer else { Issue.record("\(replayed)"); return }
        #expect(error.code == .requestReplayed && error.code.rawValue == 10406)
        #expect(try #require(c.hosts[c.leader(of: shard)!]!.imOutbox(shard: shard)).count == 1, "applied once")

        let full = ShardOutcome.room(RoomsState.refusedRequest(.ledgerFull))
        guard case .failure(let fullError) = full.imAnswer else { Issue.record("\(full)"); return }
        #expect(fullError.code == .tooManyRequests)
        guard case .failure = ShardOutcome.webhook.imAnswer else { Issue.record("a webhook answer read as IM success"); return }
        let sent = ApplyOutcome(result: .success(.messageSent(seq: 4, time: 9, serverId: 77)), events: [])
        #expect(ShardOutcome.room(sent).roomAnswer == sent)
        #expect(ShardOutcome.im(.success(.confirmed)).roomAnswer.errorCode != nil, "an IM answer never reads as a room's success")
    }
}
