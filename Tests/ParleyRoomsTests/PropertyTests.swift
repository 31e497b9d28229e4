import Testing
@testable import ParleyRooms

@Suite struct PropertyTests {
    static var limits: RoomLimits {
        var l = RoomLimits()
        l.maxRoomsPerUser = 3
        l.maxFixedMembers = 4
        l.maxHistoryPerRoom = 40
        l.historyRetentionMillis = 600_000
        return l
    }

    /// Invariants that must hold after every step.
    static func checkInvariants(_ state: RoomsState, step: Int) {
        var derivedUserRooms: [String: [String]] = [:]
        for id in state.roomIds {
            let room = state.rooms[id]!
            #expect(room.fixedMemberCount <= state.limits.maxFixedMembers, "step \(step): M1 fixed limit")
            let onlineUsers = Set(room.sessions.values.map(\.userId))
            #expect(room.onlineUserCount == onlineUsers.count, "step \(step): online count")
            #expect(Set(room.userSessions.keys) == onlineUsers, "step \(step): user sessions index")
            for (u, sids) in room.userSessions {
                #expect(!sids.isEmpty && sids.allSatisfy { room.sessions[$0]?.userId == u }, "step \(step)")
                derivedUserRooms[u, default: []].append(id)
            }
            #expect(room.userSessions.values.reduce(0) { $0 + $1.count } == room.sessions.count, "step \(step)")
            for m in room.members.values {
                #expect(m.isFixed || room.isOnline(m.userId), "step \(step): visitor record without a session")
            }
            for u in onlineUsers { #expect(room.members[u] != nil, "step \(step): online user without record") }
            #expect(room.info.isOpen || room.sessions.isEmpty, "step \(step): closed room with sessions")
            #expect(room.queue.count <= room.queueMaxSize, "step \(step): queue size")
            #expect(room.history.count <= state.limits.maxHistoryPerRoom, "step \(step): history cap")
            #expect(room.members[room.info.creator]?.role == .creator, "step \(step): creator kept")
        }
        #expect(derivedUserRooms == state.userRooms, "step \(step): E3 index")
        for rooms in state.userRooms.values {
            #expect(rooms.count <= state.limits.maxRoomsPerUser, "step \(step): E3 limit")
        }
    }

    @Test("Determinism: random sequences give identical results, events and snapshots on two states and on one restored half-way",
          arguments: [1, 2, 3, 4] as [UInt64])
    func replicasAgree(seed: UInt64) throws {
        var generator = CommandGenerator(seed: seed)
        let steps = 800
        let entries = (0 ..< steps).map { _ in generator.next() }
        var a = RoomsState(limits: Self.limits)
        var b = RoomsState(limits: Self.limits)
        var c: RoomsState?
        var roomSeqs: [String: UInt64] = [:]
        var failures = 0
        for (step, (command, context)) in entries.enumerated() {
            if step == steps / 2 {
                let bytes = a.snapshot()
                let restored = try RoomsState(restoring: bytes)
                #expect(restored.snapshot() == bytes, "restore then snapshot is byte-identical")
                c = restored
            }
            let before = a.snapshot()
            let outcomeA = a.apply(command, context: context)
            // Replica B sees the command as a Raft entry would carry it: encoded and decoded.
            let decoded = try RoomCommand(decoding: command.encoded())
            let decodedContext = try ApplyContext(decoding: context.encoded())
            #expect(decoded == command && decodedContext == context)
            let outcomeB = b.apply(decoded, context: decodedContext)
            #expect(outcomeA == outcomeB, "step \(step): replicas disagree on \(command)")
            if c != nil {
                #expect(c!.apply(command, context: context) == outcomeA, "step \(step): restored state disagrees")
            }
            if outcomeA.errorCode != nil || command.isReadOnly {
                #expect(a.snapshot() == before, "step \(step): \(command) changed state")
                #expect(outcomeA.events.isEmpty || outcomeA.errorCode == nil)
            }
            if outcomeA.errorCode != nil { failures += 1 }
            // The outcome travels back to the edge in the same binary form.
            #expect(try ApplyOutcome(decoding: outcomeA.encoded()) == outcomeA, "step \(step)")
            for e in outcomeA.events where e.audience == .room {
                #expect(e.seq > roomSeqs[e.roomId, default: 0], "step \(step): room seq must increase")
                roomSeqs[e.roomId] = e.seq
            }
            Self.checkInvariants(a, step: step)
        }
        #expect(a.snapshot() == b.snapshot())
        #expect(c!.snapshot() == a.snapshot())
        // The mix must exercise both paths.
        #expect(failures > steps / 10 && failures < steps * 9 / 10, "failures: \(failures)")
        #expect(a.snapshotSizeEstimate >= a.snapshot().count / 2)
    }

    @Test("Determinism: 400 short seeded sequences agree across two states and a half-way restore")
    func manyShortSequences() throws {
        for seed in UInt64(1000) ..< 1400 {
            var generator = CommandGenerator(seed: seed)
            var a = RoomsState(limits: Self.limits)
            var b = RoomsState(limits: Self.limits)
            var c = a
            for step in 0 ..< 24 {
                let (command, context) = generator.next()
                if step == 12 { c = try RoomsState(restoring: a.snapshot()) }
                let outcome = a.apply(command, context: context)
                #expect(b.apply(command, context: context) == outcome, "seed \(seed) step \(step)")
                if step >= 12 { #expect(c.apply(command, context: context) == outcome, "seed \(seed) step \(step)") }
            }
            let final = a.snapshot()
            #expect(b.snapshot() == final && c.snapshot() == final, "seed \(seed)")
        }
    }
}
