import Testing
@testable import ParleyRooms
import ParleyWire

@Suite struct CodecTests {
    static var sampleCommands: [RoomCommand] {
        var policy = AppPolicy()
        policy.oneRoomPerUser = true
        policy.devicePolicy = .singleDevice
        return BadInputTests.cases.map(\.command) + [
            .createRoom(CreateRoom(roomId: "r", creator: "c", name: "名前", announcement: "a", ext: "{}",
                                   broadcastUrl: "rtmp://", queueModificationLevel: .managers)),
            .updateRoom(UpdateRoom(roomId: "r", name: "n", announcement: nil, broadcastUrl: "", ext: "e",
                                   queueModificationLevel: .anyone, needNotify: false, notifyExt: "x")),
            .setRoomPolicy(RoomPolicyUpdate(roomId: "r", enterExitNotifications: false, devicePolicy: .multiDevice)),
            .setAppPolicy(policy),
            .setScopedAppPolicy(namespace: "app-1", policy),
            .fetchHistory(HistoryQuery(roomId: "r", startTime: -5, limit: 7, ascending: true, types: [.text, .custom])),
            .setTempMute(MemberUpdate(roomId: "r", userId: "u", enable: false, duration: UInt64.max,
                                      needNotify: false, notifyExt: "😀")),
            .queueInit(roomId: "r", maxSize: Int.min),
            // Two commands whose tags once collided (38): each must come back as itself.
            .enter(EnterRoom(roomId: "r", nickname: "n", replacing: "edge#7")),
            .setHistoryWindow(bytes: 1 << 20),
        ]
    }

    @Test("Every command and context round-trips through its binary form")
    func commandRoundTrip() throws {
        for command in Self.sampleCommands {
            #expect(try RoomCommand(decoding: command.encoded()) == command)
        }
        let contexts = [
            ApplyContext(commandIndex: 0, timestamp: 0, actor: .appServer),
            ApplyContext(commandIndex: .max, timestamp: .min, actor: .session(SessionIdentity(
                userId: "u", authMode: .anonymous, sessionId: "s", edgeId: "e"))),
        ]
        for c in contexts { #expect(try ApplyContext(decoding: c.encoded()) == c) }
    }

    @Test("Events round-trip through the same codec")
    func eventRoundTrip() throws {
        var shard = TestShard.populated(policy: {
            var p = AppPolicy()
            p.memberChangeEvents = true
            return p
        }())
        var events: [RoomEvent] = []
        events += shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "k", value: "v", transient: true))).events
        events += shard.user("dave", .sendMessage(SendMessage(roomId: "r1", body: "hi"))).events
        events += shard.user("boss", .setTempMute(MemberUpdate(roomId: "r1", userId: "erin", duration: 5))).events
        events += shard.user("boss", .setBlocked(MemberUpdate(roomId: "r1", userId: "dave", duration: 3))).events
        events += shard.run(.closeRoom(roomId: "r1", ext: "x")).events
        #expect(events.count > 8)
        for e in events { #expect(try RoomEvent(decoding: e.encoded()) == e) }
    }

    @Test("Decoding garbage throws a clean error and never traps; unknown tags map to code 13108")
    func garbage() throws {
        var rng = SplitMix64(state: 42)
        for _ in 0 ..< 5_000 {
            let bytes = (0 ..< rng.below(48)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if let decoded = try? RoomCommand(decoding: bytes) {
                // Whatever decodes must be a real command that encodes back the same way.
                #expect(try RoomCommand(decoding: decoded.encoded()) == decoded)
            }
            _ = try? ApplyContext(decoding: bytes)
            _ = try? RoomsState(restoring: bytes)
        }
        for command in Self.sampleCommands {
            let bytes = command.encoded()
            for cut in 0 ..< bytes.count {
                #expect(throws: CodecError.self) { try RoomCommand(decoding: Array(bytes[..<cut])) }
            }
            #expect(throws: CodecError.self) { try RoomCommand(decoding: bytes + [0]) }
        }
        do {
            _ = try RoomCommand(decoding: [200])
            Issue.record("tag 200 decoded")
        } catch {
            #expect(error.roomError.code == .unknownOperation)
        }
        do {
            _ = try RoomCommand(decoding: [8, 0xFF])
            Issue.record("truncated enter decoded")
        } catch {
            #expect(error.roomError.code == .malformedCommand)
        }
        #expect(throws: CodecError.invalidUTF8) { try RoomCommand(decoding: [9, 2, 0xC3, 0x28]) }
        #expect(throws: CodecError.overlongVarint) {
            try RoomCommand(decoding: [25, 0] + Array(repeating: 0xFF, count: 10) + [1])
        }
    }

    /// `ByteReader.readString` decodes with repair and keeps the string only when the bytes came back
    /// unchanged: every kind of invalid UTF-8 must still throw, including a truncated sequence whose one
    /// replacement character is as long as it was, and valid text (a literal U+FFFD too) must read back whole.
    @Test("Strings: invalid UTF-8 of every kind throws, valid text reads back")
    func stringValidation() throws {
        func read(_ utf8: [UInt8]) throws(CodecError) -> String {
            var w = ByteWriter()
            w.write(UInt64(utf8.count))
            var r = ByteReader(w.bytes + utf8)
            return try r.readString()
        }
        let invalid: [[UInt8]] = [
            [0xC3, 0x28],                    // a lead byte without its continuation
            [0xF0, 0x9F, 0x98],              // a 4-byte sequence cut to 3: one U+FFFD, also 3 bytes
            [0x41, 0xF0, 0x9F, 0x98, 0x42],  // the same inside text
            [0xED, 0xA0, 0x80],              // a UTF-16 surrogate
            [0xC0, 0xAF],                    // overlong
            [0xF4, 0x90, 0x80, 0x80],        // above U+10FFFF
            [0xFF], [0x80],
        ]
        for bytes in invalid {
            #expect(throws: CodecError.invalidUTF8, "\(bytes)") { try read(bytes) }
        }
        for text in ["", "room-1", "聊天室 🎉", "\u{FFFD}", String(repeating: "é", count: 100)] {
            #expect(try read(Array(text.utf8)) == text)
        }
    }

    @Test("Corrupted commands that still decode apply without trapping, and failures change nothing")
    func corruptedCommandsApply() {
        var rng = SplitMix64(state: 7)
        var shard = BadInputTests.fixture()
        let actors = [CommandActor.appServer, TestShard.session("owner"), TestShard.session("boss"),
                      TestShard.session("dave"), TestShard.session("anon", mode: .anonymous)]
        var applied = 0
        for command in Self.sampleCommands {
            let bytes = command.encoded()
            for _ in 0 ..< 20 {
                var corrupt = bytes
                corrupt[rng.below(corrupt.count)] = UInt8(truncatingIfNeeded: rng.next())
                guard let decoded = try? RoomCommand(decoding: corrupt) else { continue }
                let before = shard.state.snapshot()
                let outcome = shard.run(decoded, as: rng.pick(actors))
                if outcome.errorCode != nil { #expect(shard.state.snapshot() == before) }
                applied += 1
            }
        }
        #expect(applied > 500)
    }

    @Test("Snapshots: restore gives the same bytes; truncated, corrupted or foreign bytes throw")
    func snapshotRestore() throws {
        var shard = TestShard.populated()
        shard.user("dave", .queueOffer(QueueOffer(roomId: "r1", key: "k", value: "v", transient: true)))
        shard.user("dave", .sendMessage(SendMessage(roomId: "r1", body: "hi")))
        shard.user("boss", .setTempMute(MemberUpdate(roomId: "r1", userId: "erin", duration: 5)))
        shard.user("boss", .updateAllowlist(RoomSwitch(roomId: "r1", enable: true, userIds: ["x", "a"])))
        shard.run(.setGlobalMute(GlobalMute(userId: "carol", enable: true, minutes: 3)))
        shard.enter("carol", device: 2)
        let bytes = shard.state.snapshot()
        let restored = try RoomsState(restoring: bytes)
        #expect(restored.snapshot() == bytes)
        #expect(restored.userRooms == shard.state.userRooms)
        #expect(restored.rooms["r1"]!.userSessions["carol"] == ["carol#1", "carol#2"])
        for cut in stride(from: 0, to: bytes.count, by: 7) {
            #expect(throws: CodecError.self) { try RoomsState(restoring: Array(bytes[..<cut])) }
        }
        var foreign = bytes
        foreign[0] = 0
        #expect(throws: CodecError.badMagic) { try RoomsState(restoring: foreign) }
        var future = bytes
        future[4] = RoomsState.snapshotVersion + 1
        #expect(throws: CodecError.badVersion(RoomsState.snapshotVersion + 1)) { try RoomsState(restoring: future) }
        #expect(shard.state.snapshotSizeEstimate >= bytes.count / 2)
    }

    @Test("A well-formed but inconsistent snapshot is refused, not trusted")
    func inconsistentSnapshot() {
        var shard = TestShard()
        shard.createRoom()
        shard.enter("amy")
        let slot = shard.state.rooms.slot(of: "r1")!
        shard.state.rooms[slot: slot].members["amy"] = nil
        #expect(throws: CodecError.invalidValue("inconsistent room r1")) {
            try RoomsState(restoring: shard.state.snapshot())
        }
    }

    @Test("Snapshots are byte-deterministic: the same content gives the same bytes whatever the insertion order")
    func snapshotDeterminism() {
        var one = TestShard()
        var two = TestShard()
        for id in ["a", "b", "c", "d", "e"] { one.createRoom(id) }
        for id in ["e", "d", "c", "b", "a"] { two.createRoom(id) }
        for u in ["p", "q", "r", "s"] {
            one.run(.setGlobalMute(GlobalMute(userId: u, enable: true)))
        }
        for u in ["s", "r", "q", "p"] {
            two.run(.setGlobalMute(GlobalMute(userId: u, enable: true)))
        }
        #expect(one.state.snapshot() == two.state.snapshot())
    }

    @Test("Issue 34: a message's answer in the compact form carries its serverId and not the message; the older form still reads")
    func compactAnswers() throws {
        var shard = TestShard.populated()
        let sent = shard.user("dave", .sendMessage(SendMessage(roomId: "r1", clientMessageId: "c1", body: String(repeating: "x", count: 500))))
        guard case .messageSent(_, _, let serverId)? = sent.reply, case .message(let m)? = sent.events.first?.kind else {
            Issue.record("not a message: \(sent)")
            return
        }
        #expect(serverId == m.serverId && serverId > 0)

        var compact = ByteWriter()
        sent.encodeCompact(to: &compact)
        let read = try ApplyOutcome(decoding: compact.bytes)
        #expect(read.result == sent.result && read.events.isEmpty)
        #expect(compact.bytes.count < 40 && sent.encoded().count > 500)
        // The form of peer protocol 6 and older: the reply without the id, which comes from the message event.
        let older = try ApplyOutcome(decoding: sent.encoded())
        #expect(older == sent)

        // Anything but a message keeps its events (an enter's own 301, an exit's quit); a failure reads as before.
        let entered = shard.enter("zed")
        #expect(!entered.events.isEmpty)
        var enterBytes = ByteWriter()
        entered.encodeCompact(to: &enterBytes)
        #expect(try ApplyOutcome(decoding: enterBytes.bytes) == entered)
        let refused = shard.run(.sendMessage(SendMessage(roomId: "r1", body: "x")), as: TestShard.session("ghost"))
        var refusedBytes = ByteWriter()
        refused.encodeCompact(to: &refusedBytes)
        #expect(refusedBytes.bytes == refused.encoded())
        #expect(try ApplyOutcome(decoding: refusedBytes.bytes) == refused)
    }
}
