import Foundation
import Testing
import ParleyClient

/// The SDK against the protocol test peer: enter, requests, heartbeat, and the E8 / X2 reconnect rules.
/// `.serialized` because every test runs a server and the machine has two cores.
@Suite(.serialized) struct ReconnectTests {
    static let alice = ChatroomAuth.independent(appKey: "demo", account: "alice", token: "t0k")

    func withPeer(_ body: (ProtocolTestPeer) async throws -> Void) async throws {
        let peer = ProtocolTestPeer()
        try await peer.start()
        do {
            try await body(peer)
        } catch {
            await peer.stop()
            throw error
        }
        await peer.stop()
    }

    func client(_ addresses: [String], reconnectDelay: Duration = .milliseconds(20), requestTimeout: Duration = .seconds(5),
                connectTimeout: Duration = .seconds(5)) -> ChatroomClient {
        var configuration = ChatroomClient.Configuration.addresses(addresses)
        configuration.reconnectDelay = reconnectDelay
        configuration.requestTimeout = requestTimeout
        configuration.connectTimeout = connectTimeout
        return ChatroomClient(configuration: configuration)
    }

    @Test func entersThroughTheFirstLiveAddressAndTalks() async throws {
        try await withPeer { peer in
            // Port 1 refuses connections: E6 says the client tries the addresses in order.
            let c = client(["127.0.0.1:1", await peer.address])
            let log = EventLog(c)
            let result = try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice, nickname: "Alice"))
            #expect(result.account == "alice" && result.authMode == .independent && !result.resumed)
            let receipt = try await c.sendMessage("r1", body: "hello", clientMessageId: "c-1")
            #expect(receipt.seq == 1)
            try await log.until("message event") { $0.contains { if case .message("r1", let m) = $0 { m.body == "hello" } else { false } } }
            #expect(try await c.fetchChatroomInfo("r1").seq == 1)
            #expect(await log.states("r1") == [.entering, .enterOK])
            // The peer does not know this op: the server's code comes back as a ChatroomError.
            await #expect(throws: ChatroomError(code: 4004, message: "unknown op queueDrop")) { try await c.dropChatroomQueue("r1") }
            await #expect(throws: ChatroomError.self) { try await c.sendMessage("elsewhere", body: "x") }
            try await c.exitChatroom("r1")
            #expect(await c.enteredRoomIds.isEmpty)
            await c.close()
        }
    }

    @Test func aBadTokenFailsTheEnter() async throws {
        try await withPeer { peer in
            let c = client([await peer.address, await peer.address])
            let log = EventLog(c)
            await #expect(throws: ChatroomError(code: 4010, message: "bad token")) {
                try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: .im(appKey: "demo", account: "alice", token: "bad")))
            }
            try await log.until("enterFailed") { $0.contains(.connectionState(roomId: "r1", .enterFailed)) }
            #expect(await log.states("r1") == [.entering, .enterFailed])
            // A bad token is the same everywhere: the second address is not tried.
            #expect(await peer.enters.count == 1)
            #expect(await c.enteredRoomIds.isEmpty)
            await c.close()
        }
    }

    @Test func reconnectsResumesFromTheLastSeqAndDropsDuplicates() async throws {
        try await withPeer { peer in
            // The peer replays two events the client already has: they must not reach the app twice.
            await peer.set(replayOverlap: 2)
            // Long enough for the test to send while the client is away.
            let c = client([await peer.address], reconnectDelay: .milliseconds(400))
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice))
            for i in 1...3 { await peer.inject(roomId: "r1", body: "live-\(i)") }
            try await log.until("3 live messages") { $0.filter { if case .message = $0 { true } else { false } }.count == 3 }

            await peer.drop(roomId: "r1")
            try await log.until("LoseConnection") { $0.contains(.connectionState(roomId: "r1", .loseConnection)) }
            // Sent while the client was away; the resume must bring them.
            for i in 4...5 { await peer.inject(roomId: "r1", body: "missed-\(i)") }
            try await log.until("re-entered") { $0.filter { $0 == .connectionState(roomId: "r1", .enterOK) }.count == 2 }
            try await log.until("missed messages") { events in
                events.filter { if case .message = $0 { true } else { false } }.count >= 5
            }
            await peer.inject(roomId: "r1", body: "after")
            try await log.until("message after resume") { $0.contains { if case .message(_, let m) = $0 { m.body == "after" } else { false } } }

            #expect(await log.messageSeqs("r1") == [1, 2, 3, 4, 5, 6])
            #expect(await log.messageBodies("r1") == ["live-1", "live-2", "live-3", "missed-4", "missed-5", "after"])
            #expect(await log.states("r1") == [.entering, .enterOK, .loseConnection, .entering, .enterOK])
            let enters = await peer.enters
            #expect(enters.map(\.lastSeq) == [nil, 3])
            #expect(await c.ledger(of: "r1")?.lastSeq == 6)
            // Requests work again on the new connection.
            #expect(try await c.sendMessage("r1", body: "back").seq == 7)
            await c.close()
        }
    }

    @Test func aBlocklistRefusalOnReEnterIsAutoLoginFailedAndEndsRetrying() async throws {
        try await withPeer { peer in
            let c = client([await peer.address])
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice, retryCount: 5))
            await peer.set(refuseEnters: ChatroomError(code: 13003, message: "in blocklist"))
            await peer.drop(roomId: "r1")
            try await log.until("autoLoginFailed") { $0.contains { if case .autoLoginFailed = $0 { true } else { false } } }
            #expect(await log.events.last == .autoLoginFailed(roomId: "r1", ChatroomError(code: 13003, message: "in blocklist")))
            #expect(await log.states("r1") == [.entering, .enterOK, .loseConnection, .entering, .enterFailed])
            // One refused attempt, not five, and the room is gone from the client.
            try await Task.sleep(for: .milliseconds(300))
            #expect(await peer.enters.count == 2)
            #expect(await c.enteredRoomIds.isEmpty)
            await c.close()
        }
    }

    @Test func transientFailuresUseUpRetryCountThenAutoLoginFailed() async throws {
        try await withPeer { peer in
            let c = client([await peer.address])
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice, retryCount: 2))
            await peer.set(refuseEnters: ChatroomError(code: 5030, message: "no leader"))
            await peer.drop(roomId: "r1")
            try await log.until("autoLoginFailed") { $0.contains { if case .autoLoginFailed = $0 { true } else { false } } }
            #expect(await log.states("r1") == [.entering, .enterOK, .loseConnection, .entering, .enterFailed, .entering, .enterFailed])
            #expect(await peer.enters.count == 3)
            #expect(await log.events.last == .autoLoginFailed(roomId: "r1", ChatroomError(code: 5030, message: "no leader")))
            await c.close()
        }
    }

    @Test func retryCountZeroNeverReEnters() async throws {
        try await withPeer { peer in
            let c = client([await peer.address])
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice, retryCount: 0))
            await peer.drop(roomId: "r1")
            try await log.until("autoLoginFailed") { $0.contains { if case .autoLoginFailed = $0 { true } else { false } } }
            #expect(await log.states("r1") == [.entering, .enterOK, .loseConnection])
            try await Task.sleep(for: .milliseconds(200))
            #expect(await peer.enters.count == 1)
            await c.close()
        }
    }

    @Test func afterAKickTheRoomIsNotReEntered() async throws {
        try await withPeer { peer in
            let owner = client([await peer.address])
            let guest = client([await peer.address])
            let log = EventLog(guest)
            try await owner.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: .independent(appKey: "demo", account: "owner", token: "t")))
            try await guest.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice))
            try await owner.kickMember("r1", userId: "alice", notifyExt: "out")
            try await log.until("kicked") { $0.contains(.kicked(roomId: "r1", reason: .byManager, ext: "out")) }
            try await Task.sleep(for: .milliseconds(300))
            #expect(await peer.enters.count == 2)
            #expect(await log.states("r1") == [.entering, .enterOK])
            #expect(await guest.enteredRoomIds.isEmpty)
            await #expect(throws: ChatroomError.self) { try await guest.sendMessage("r1", body: "still here?") }
            await owner.close()
            await guest.close()
        }
    }

    @Test func aResumeTooOldIsReportedAsAGap() async throws {
        try await withPeer { peer in
            let c = client([await peer.address], reconnectDelay: .milliseconds(400))
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice))
            await peer.inject(roomId: "r1", body: "one")
            try await log.until("one") { $0.contains { if case .message = $0 { true } else { false } } }
            await peer.set(historyStartsAt: 5)
            await peer.drop(roomId: "r1")
            try await log.until("LoseConnection") { $0.contains(.connectionState(roomId: "r1", .loseConnection)) }
            for i in 2...6 { await peer.inject(roomId: "r1", body: "gone-\(i)") }
            try await log.until("gap") { $0.contains(.gap(roomId: "r1", fromSeq: 2, toSeq: 6)) }
            #expect(await c.ledger(of: "r1")?.resumePoint == 6)
            await c.close()
        }
    }

    /// X2 / issue 16 (chaos 57048): the replayed items follow the gapTooOld answer at once, and the SDK may read
    /// them before the entering task takes the answer. They must not move the resume point past the lost range
    /// first, or the gap is never reported: the app sees 2…4 named lost, then 5…8, each once.
    @Test func replayedItemsAfterAGapTooOldAnswerStillReportTheGapFirst() async throws {
        try await withPeer { peer in
            await peer.set(replayNewestOnGap: true)
            for round in 1...5 {
                let roomId = "g\(round)"
                let c = client([await peer.address], reconnectDelay: .milliseconds(100))
                let log = EventLog(c)
                try await c.enterChatroom(ChatroomEnterRequest(roomId: roomId, auth: Self.alice))
                await peer.inject(roomId: roomId, body: "one")
                try await log.until("one") { $0.contains { if case .message = $0 { true } else { false } } }
                await peer.set(historyStartsAt: 5)
                await peer.drop(roomId: roomId)
                try await log.until("LoseConnection") { $0.contains(.connectionState(roomId: roomId, .loseConnection)) }
                for i in 2...8 { await peer.inject(roomId: roomId, body: "m\(i)") }
                try await log.until("m8") { $0.contains { if case .message(_, let m) = $0 { m.body == "m8" } else { false } } }
                let events = await log.events.filter {
                    switch $0 { case .gap, .message: true; default: false }
                }
                let names = events.map { event -> String in
                    switch event {
                    case .gap(_, let from, let to): "gap \(from)-\(to)"
                    case .message(_, let m): m.body
                    default: "?"
                    }
                }
                #expect(names == ["one", "gap 2-4", "m5", "m6", "m7", "m8"], "round \(round)")
                #expect(await c.ledger(of: roomId)?.resumePoint == 8)
                await c.close()
                await peer.set(historyStartsAt: 1)
            }
        }
    }

    @Test func unansweredRequestsTimeOutAndHeartbeatsFollowTheServersInterval() async throws {
        try await withPeer { peer in
            await peer.set(heartbeatMs: 50, silentOps: ["fetchRoomInfo"])
            let c = client([await peer.address], requestTimeout: .milliseconds(300))
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice))
            do {
                _ = try await c.fetchChatroomInfo("r1")
                Issue.record("a request the server never answers returned")
            } catch let error as ChatroomError {
                #expect(error.code == ChatroomError.timeout)
            }
            // Pings every 50 ms: at least three within a few seconds, however loaded the machine is.
            let deadline = ContinuousClock.now + .seconds(5)
            while await peer.pings < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(await peer.pings >= 3)
            await c.close()
        }
    }

    @Test func aSilentServerIsDetectedByTheHeartbeatAndReconnected() async throws {
        try await withPeer { peer in
            await peer.set(heartbeatMs: 50)
            let c = client([await peer.address], requestTimeout: .milliseconds(200))
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice))
            await peer.set(silentOps: ["ping"])
            try await log.until("LoseConnection") { $0.contains(.connectionState(roomId: "r1", .loseConnection)) }
            await peer.set(silentOps: [])
            try await log.until("re-entered") { $0.filter { $0 == .connectionState(roomId: "r1", .enterOK) }.count == 2 }
            #expect(await peer.enters.map(\.lastSeq) == [nil, 0])
            await c.close()
        }
    }
    /// A1: a ping refused 416 (the connection's request budget, which counts pings) came from a live edge:
    /// the heartbeat keeps the link instead of dropping and re-entering (issue 37 found this in both SDKs).
    @Test func aPingRefusedOverBudgetKeepsTheLink() async throws {
        try await withPeer { peer in
            await peer.set(heartbeatMs: 40, refusedOps: ["ping": ChatroomError(code: ChatroomError.rateLimited, message: "over budget", retryAfterMs: 50)])
            let c = client([await peer.address], requestTimeout: .milliseconds(200))
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice))
            let deadline = ContinuousClock.now + .seconds(5)
            while await peer.pings < 4, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(await peer.pings >= 4, "the heartbeat stopped pinging")
            #expect(await !log.events.contains(.connectionState(roomId: "r1", .loseConnection)))
            #expect(await peer.enters.count == 1)
            await c.close()
        }
    }

    @Test func eachRoomHasItsOwnConnectionAndRecoversAlone() async throws {
        try await withPeer { peer in
            let c = client([await peer.address], reconnectDelay: .milliseconds(400))
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice))
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r2", auth: Self.alice))
            #expect(await peer.openConnections == 2)
            await peer.drop(roomId: "r1")
            try await log.until("r1 lost") { $0.contains(.connectionState(roomId: "r1", .loseConnection)) }
            // r1 is away: its calls fail with 415 at once; r2 goes on as if nothing happened.
            do {
                _ = try await c.sendMessage("r1", body: "lost")
                Issue.record("a call on a reconnecting room went through")
            } catch let error as ChatroomError {
                #expect(error.code == ChatroomError.connectionLost)
            }
            #expect(try await c.sendMessage("r2", body: "fine").seq == 1)
            try await log.until("r1 back") { $0.filter { $0 == .connectionState(roomId: "r1", .enterOK) }.count == 2 }
            #expect(await log.states("r2") == [.entering, .enterOK])
            #expect(await c.enteredRoomIds == ["r1", "r2"])
            await c.close()
        }
    }

    @Test func exitWhileReEnteringStopsTheAttempts() async throws {
        try await withPeer { peer in
            let c = client([await peer.address], reconnectDelay: .milliseconds(50))
            let log = EventLog(c)
            try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice, retryCount: 50))
            await peer.set(refuseEnters: ChatroomError(code: 5030, message: "no leader"))
            await peer.drop(roomId: "r1")
            try await log.until("a failed attempt") { $0.contains(.connectionState(roomId: "r1", .enterFailed)) }
            try await c.exitChatroom("r1")
            try await Task.sleep(for: .milliseconds(50))
            let attempts = await peer.enters.count
            try await Task.sleep(for: .milliseconds(400))
            #expect(await peer.enters.count == attempts)
            #expect(await c.enteredRoomIds.isEmpty)
            #expect(!(await log.events.contains { if case .autoLoginFailed = $0 { true } else { false } }))
            await c.close()
        }
    }
    @Test func anAddressThatNeverFinishesTheUpgradeIsSkippedAfterTheTimeout() async throws {
        try await withPeer { peer in
            let silent = try SilentListener()
            let c = client(["127.0.0.1:\(silent.port)", await peer.address], connectTimeout: .seconds(1))
            let started = ContinuousClock.now
            let result = try await c.enterChatroom(ChatroomEnterRequest(roomId: "r1", auth: Self.alice))
            #expect(result.account == "alice")
            // The silent address costs the connect timeout, not the 5 s request timeout.
            #expect(ContinuousClock.now - started < .seconds(4))
            await c.close()
        }
    }
}
