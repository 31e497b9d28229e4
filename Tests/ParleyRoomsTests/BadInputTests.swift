import Testing
@testable import ParleyRooms

/// One rejected command: what is sent, by whom, and the code it must get.
struct BadInput: Sendable, CustomTestStringConvertible {
    var name: String
    var command: RoomCommand
    var actor: CommandActor
    var code: RoomErrorCode

    init(_ name: String, _ command: RoomCommand, by actor: CommandActor = .appServer, _ code: RoomErrorCode) {
        self.name = name
        self.command = command
        self.actor = actor
        self.code = code
    }

    var testDescription: String { name }
}

private func s(_ user: String, mode: AuthMode = .imSession) -> CommandActor { TestShard.session(user, mode: mode) }
private func mu(_ user: String, enable: Bool = true, duration: UInt64 = 0, notifyExt: String = "",
                room: String = "r1") -> MemberUpdate {
    MemberUpdate(roomId: room, userId: user, enable: enable, duration: duration, notifyExt: notifyExt)
}

/// Bad input for each command: the right code, no events, and a byte-identical snapshot (invariant 5).
@Suite struct BadInputTests {
    /// The populated room r1, a closed room "gone", and "busy" online in ten rooms.
    static func fixture() -> TestShard {
        var shard = TestShard.populated()
        shard.createRoom("gone")
        shard.run(.closeRoom(roomId: "gone", ext: ""))
        for i in 0 ..< 10 {
            shard.createRoom("b\(i)")
            shard.enter("busy", "b\(i)")
        }
        shard.enter("anon", mode: .anonymous)
        return shard
    }

    static let cases: [BadInput] = [
        // createRoom
        BadInput("createRoom by a client", .createRoom(CreateRoom(roomId: "n", creator: "x", name: "n")), by: s("dave"), .noPermission),
        BadInput("createRoom existing id", .createRoom(CreateRoom(roomId: "r1", creator: "x", name: "n")), .alreadyInState),
        BadInput("createRoom empty id", .createRoom(CreateRoom(roomId: "", creator: "x", name: "n")), .badParameter),
        BadInput("createRoom empty creator", .createRoom(CreateRoom(roomId: "n", creator: "", name: "n")), .badParameter),
        BadInput("createRoom oversize name", .createRoom(CreateRoom(roomId: "n", creator: "x", name: .bytes(129))), .badParameter),
        BadInput("createRoom oversize announcement", .createRoom(CreateRoom(roomId: "n", creator: "x", name: "n", announcement: .bytes(4097))), .badParameter),
        BadInput("createRoom oversize url", .createRoom(CreateRoom(roomId: "n", creator: "x", name: "n", broadcastUrl: .bytes(1025))), .badParameter),
        // updateRoom
        BadInput("updateRoom unknown room", .updateRoom(UpdateRoom(roomId: "zz", name: "n")), .roomNotFound),
        BadInput("updateRoom closed room", .updateRoom(UpdateRoom(roomId: "gone", name: "n")), .roomClosed),
        BadInput("updateRoom nothing", .updateRoom(UpdateRoom(roomId: "r1")), .badParameter),
        BadInput("updateRoom ordinary member", .updateRoom(UpdateRoom(roomId: "r1", name: "n")), by: s("carol"), .noPermission),
        BadInput("updateRoom not entered", .updateRoom(UpdateRoom(roomId: "r1", name: "n")), by: s("ghost"), .notEntered),
        BadInput("updateRoom oversize notifyExt", .updateRoom(UpdateRoom(roomId: "r1", name: "n", notifyExt: .bytes(2049))), .badParameter),
        // closeRoom / reopenRoom / policies
        BadInput("closeRoom by a client", .closeRoom(roomId: "r1", ext: ""), by: s("owner"), .noPermission),
        BadInput("closeRoom closed", .closeRoom(roomId: "gone", ext: ""), .roomClosed),
        BadInput("closeRoom unknown", .closeRoom(roomId: "zz", ext: ""), .roomNotFound),
        BadInput("closeRoom oversize ext", .closeRoom(roomId: "r1", ext: .bytes(2049)), .badParameter),
        BadInput("reopenRoom open", .reopenRoom(roomId: "r1"), .alreadyInState),
        BadInput("reopenRoom unknown", .reopenRoom(roomId: "zz"), .roomNotFound),
        BadInput("reopenRoom by a client", .reopenRoom(roomId: "gone"), by: s("owner"), .noPermission),
        BadInput("setRoomPolicy unknown", .setRoomPolicy(RoomPolicyUpdate(roomId: "zz")), .roomNotFound),
        BadInput("setRoomPolicy by a client", .setRoomPolicy(RoomPolicyUpdate(roomId: "r1")), by: s("owner"), .noPermission),
        BadInput("setAppPolicy by a client", .setAppPolicy(AppPolicy()), by: s("owner"), .noPermission),
        BadInput("setSendBudget by a client", .setSendBudget(namespace: "a", SendBudget()), by: s("owner"), .noPermission),
        BadInput("setSendBudget rate 0", .setSendBudget(namespace: "a", SendBudget(userMessagesPerSecond: 0, userBurst: 1,
                                                                                   roomMessagesPerSecond: 1, roomBurst: 1)), .badParameter),
        BadInput("setSendBudget burst below rate", .setSendBudget(namespace: "a", SendBudget(userMessagesPerSecond: 5, userBurst: 4,
                                                                                             roomMessagesPerSecond: 9, roomBurst: 9)), .badParameter),
        BadInput("setSendBudget bad namespace", .setSendBudget(namespace: "a\u{1F}b", SendBudget()), .badParameter),
        BadInput("setHistoryWindow by a client", .setHistoryWindow(bytes: 1 << 20), by: s("owner"), .noPermission),
        BadInput("setHistoryWindow below 64 KiB", .setHistoryWindow(bytes: 4_096), .badParameter),
        BadInput("setHistoryWindow negative", .setHistoryWindow(bytes: -1), .badParameter),
        BadInput("fetchRoomInfo unknown", .fetchRoomInfo(roomId: "zz"), .roomNotFound),
        BadInput("fetchRoomInfo not entered", .fetchRoomInfo(roomId: "r1"), by: s("ghost"), .notEntered),
        // enter / exit / sessionLost
        BadInput("enter unknown room", .enter(EnterRoom(roomId: "zz", nickname: "n")), by: s("ghost"), .roomNotFound),
        BadInput("enter closed room", .enter(EnterRoom(roomId: "gone", nickname: "n")), by: s("ghost"), .roomClosed),
        BadInput("enter full room list", .enter(EnterRoom(roomId: "r1", nickname: "n")), by: s("busy"), .tooManyRooms),
        BadInput("enter oversize nickname", .enter(EnterRoom(roomId: "r1", nickname: .bytes(65))), by: s("ghost"), .badParameter),
        BadInput("enter oversize roomExt", .enter(EnterRoom(roomId: "r1", roomExt: .bytes(4097))), by: s("ghost"), .badParameter),
        BadInput("enter oversize notifyExt", .enter(EnterRoom(roomId: "r1", roomNotifyExt: .bytes(2049))), by: s("ghost"), .badParameter),
        BadInput("enter same session twice", .enter(EnterRoom(roomId: "r1", nickname: "n")), by: s("dave"), .sessionAlreadyEntered),
        BadInput("enter by the app server", .enter(EnterRoom(roomId: "r1", nickname: "n")), .noPermission),
        BadInput("enter anonymous without avatar", .enter(EnterRoom(roomId: "r1", nickname: "n")), by: s("a2", mode: .anonymous), .badParameter),
        BadInput("exit not entered", .exit(roomId: "r1"), by: s("ghost"), .notEntered),
        BadInput("exit unknown room", .exit(roomId: "zz"), by: s("dave"), .roomNotFound),
        BadInput("exit by the app server", .exit(roomId: "r1"), .noPermission),
        BadInput("sessionLost by a client", .sessionLost(edgeId: "edge-1"), by: s("dave"), .noPermission),
        BadInput("sessionLost empty edge", .sessionLost(edgeId: ""), .badParameter),
        // sendMessage / fetchHistory
        BadInput("send oversize body", .sendMessage(SendMessage(roomId: "r1", body: .bytes(5001))), by: s("dave"), .badParameter),
        BadInput("send oversize ext", .sendMessage(SendMessage(roomId: "r1", body: "x", ext: .bytes(4097))), by: s("dave"), .badParameter),
        BadInput("send unknown room", .sendMessage(SendMessage(roomId: "zz", body: "x")), by: s("dave"), .roomNotFound),
        BadInput("send closed room", .sendMessage(SendMessage(roomId: "gone", body: "x")), by: s("dave"), .roomClosed),
        BadInput("send not entered", .sendMessage(SendMessage(roomId: "r1", body: "x")), by: s("ghost"), .notEntered),
        BadInput("send anonymous", .sendMessage(SendMessage(roomId: "r1", body: "x")), by: s("anon", mode: .anonymous), .anonymousCannotSend),
        BadInput("send by app server without sender", .sendMessage(SendMessage(roomId: "r1", body: "x")), .badParameter),
        BadInput("history limit > 100", .fetchHistory(HistoryQuery(roomId: "r1", limit: 101)), by: s("dave"), .badParameter),
        BadInput("history limit 0", .fetchHistory(HistoryQuery(roomId: "r1", limit: 0)), by: s("dave"), .badParameter),
        BadInput("history not entered", .fetchHistory(HistoryQuery(roomId: "r1", limit: 10)), by: s("ghost"), .notEntered),
        BadInput("history unknown room", .fetchHistory(HistoryQuery(roomId: "zz", limit: 10)), .roomNotFound),
        // members
        BadInput("fetchMembers limit > 100", .fetchMembers(FetchMembers(roomId: "r1", kind: .regular, limit: 101)), by: s("dave"), .badParameter),
        BadInput("fetchMembers not entered", .fetchMembers(FetchMembers(roomId: "r1", kind: .regular, limit: 10)), by: s("ghost"), .notEntered),
        BadInput("fetchMembers closed", .fetchMembers(FetchMembers(roomId: "gone", kind: .regular, limit: 10)), .roomClosed),
        BadInput("byIds empty ids", .fetchMembersByIds(RoomUsers(roomId: "r1", userIds: [])), by: s("dave"), .badParameter),
        BadInput("byIds too many ids", .fetchMembersByIds(RoomUsers(roomId: "r1", userIds: (0 ... 20).map { "u\($0)" })), by: s("dave"), .badParameter),
        BadInput("byIds empty id", .fetchMembersByIds(RoomUsers(roomId: "r1", userIds: [""])), by: s("dave"), .badParameter),
        BadInput("byIds unknown room", .fetchMembersByIds(RoomUsers(roomId: "zz", userIds: ["a"])), .roomNotFound),
        BadInput("updateMyInfo nothing", .updateMyMemberInfo(UpdateMyMemberInfo(roomId: "r1")), by: s("dave"), .badParameter),
        BadInput("updateMyInfo oversize nickname", .updateMyMemberInfo(UpdateMyMemberInfo(roomId: "r1", nickname: .bytes(65))), by: s("dave"), .badParameter),
        BadInput("updateMyInfo oversize ext", .updateMyMemberInfo(UpdateMyMemberInfo(roomId: "r1", ext: .bytes(4097))), by: s("dave"), .badParameter),
        BadInput("updateMyInfo not entered", .updateMyMemberInfo(UpdateMyMemberInfo(roomId: "r1", nickname: "n")), by: s("ghost"), .notEntered),
        BadInput("updateMyInfo by app server", .updateMyMemberInfo(UpdateMyMemberInfo(roomId: "r1", nickname: "n")), .noPermission),
        BadInput("updateMyInfo anonymous empty nickname", .updateMyMemberInfo(UpdateMyMemberInfo(roomId: "r1", nickname: "")), by: s("anon", mode: .anonymous), .badParameter),
        BadInput("markManager by a manager", .markManager(mu("dave")), by: s("boss"), .noPermission),
        BadInput("markManager creator", .markManager(mu("owner")), .noPermission),
        BadInput("markManager already", .markManager(mu("boss")), by: s("owner"), .alreadyInState),
        BadInput("markManager remove non-manager", .markManager(mu("carol", enable: false)), by: s("owner"), .alreadyInState),
        BadInput("markManager empty user", .markManager(mu("")), by: s("owner"), .badParameter),
        BadInput("markManager with duration", .markManager(mu("dave", duration: 5)), by: s("owner"), .badParameter),
        BadInput("markManager unknown room", .markManager(mu("dave", room: "zz")), .roomNotFound),
        BadInput("markCommon by ordinary", .markCommon(mu("dave")), by: s("carol"), .noPermission),
        BadInput("markCommon manager", .markCommon(mu("boss")), by: s("owner"), .invalidRoleTransition),
        BadInput("markCommon already", .markCommon(mu("carol")), by: s("boss"), .alreadyInState),
        BadInput("markCommon remove visitor", .markCommon(mu("dave", enable: false)), by: s("boss"), .alreadyInState),
        BadInput("setBlocked creator", .setBlocked(mu("owner")), by: s("boss"), .noPermission),
        BadInput("setBlocked by ordinary", .setBlocked(mu("dave")), by: s("carol"), .noPermission),
        BadInput("setBlocked too long", .setBlocked(mu("dave", duration: 43_201)), by: s("boss"), .badParameter),
        BadInput("setBlocked remove unblocked", .setBlocked(mu("dave", enable: false)), by: s("boss"), .alreadyInState),
        BadInput("setBlocked oversize notifyExt", .setBlocked(mu("dave", notifyExt: .bytes(2049))), by: s("boss"), .badParameter),
        BadInput("setBlocked closed room", .setBlocked(mu("dave", room: "gone")), .roomClosed),
        BadInput("setMuted manager by manager", .setMuted(mu("boss")), by: s("boss"), .noPermission),
        BadInput("setMuted unmute unmuted", .setMuted(mu("dave", enable: false)), by: s("boss"), .alreadyInState),
        BadInput("setMuted not entered operator", .setMuted(mu("dave")), by: s("ghost"), .notEntered),
        BadInput("setTempMute too long", .setTempMute(mu("dave", duration: 2_592_001)), by: s("boss"), .badParameter),
        BadInput("setTempMute lift when none", .setTempMute(mu("dave", duration: 0)), by: s("boss"), .alreadyInState),
        BadInput("setTempMute by visitor", .setTempMute(mu("erin", duration: 5)), by: s("dave"), .noPermission),
        BadInput("kick unknown member", .kick(mu("ghost")), by: s("boss"), .memberNotFound),
        BadInput("kick manager by manager", .kick(mu("boss")), by: s("boss"), .noPermission),
        BadInput("kick by ordinary", .kick(mu("dave")), by: s("carol"), .noPermission),
        BadInput("kick with enable false", .kick(mu("dave", enable: false)), by: s("boss"), .badParameter),
        BadInput("kick unknown room", .kick(mu("dave", room: "zz")), .roomNotFound),
        BadInput("roomMute by ordinary", .setRoomMute(RoomSwitch(roomId: "r1", enable: true)), by: s("carol"), .noPermission),
        BadInput("roomMute unmute unmuted", .setRoomMute(RoomSwitch(roomId: "r1", enable: false)), .alreadyInState),
        BadInput("roomMute with ids", .setRoomMute(RoomSwitch(roomId: "r1", enable: true, userIds: ["a"])), .badParameter),
        BadInput("allowlist empty ids", .updateAllowlist(RoomSwitch(roomId: "r1", enable: true)), by: s("boss"), .badParameter),
        BadInput("allowlist too many ids", .updateAllowlist(RoomSwitch(roomId: "r1", enable: true, userIds: (0 ... 20).map { "u\($0)" })), by: s("boss"), .badParameter),
        BadInput("allowlist by ordinary", .updateAllowlist(RoomSwitch(roomId: "r1", enable: true, userIds: ["a"])), by: s("carol"), .noPermission),
        BadInput("globalMute by a client", .setGlobalMute(GlobalMute(userId: "dave", enable: true)), by: s("owner"), .noPermission),
        BadInput("globalMute too long", .setGlobalMute(GlobalMute(userId: "dave", enable: true, minutes: 43_201)), .badParameter),
        BadInput("globalMute cancel unmuted", .setGlobalMute(GlobalMute(userId: "dave", enable: false)), .alreadyInState),
        BadInput("globalMute empty user", .setGlobalMute(GlobalMute(userId: "", enable: true)), .badParameter),
        // queue
        BadInput("queueInit by a client", .queueInit(roomId: "r1", maxSize: 10), by: s("owner"), .noPermission),
        BadInput("queueInit size 0", .queueInit(roomId: "r1", maxSize: 0), .badParameter),
        BadInput("queueInit size over max", .queueInit(roomId: "r1", maxSize: 1001), .badParameter),
        BadInput("queueInit unknown room", .queueInit(roomId: "zz", maxSize: 10), .roomNotFound),
        BadInput("offer empty key", .queueOffer(QueueOffer(roomId: "r1", key: "", value: "v")), by: s("dave"), .badParameter),
        BadInput("offer oversize key", .queueOffer(QueueOffer(roomId: "r1", key: .bytes(33), value: "v")), by: s("dave"), .badParameter),
        BadInput("offer oversize value", .queueOffer(QueueOffer(roomId: "r1", key: "k", value: .bytes(4097))), by: s("dave"), .badParameter),
        BadInput("offer not entered", .queueOffer(QueueOffer(roomId: "r1", key: "k", value: "v")), by: s("ghost"), .notEntered),
        BadInput("offer closed room", .queueOffer(QueueOffer(roomId: "gone", key: "k", value: "v")), .roomClosed),
        BadInput("batch empty", .queueBatchUpdate(QueueBatchUpdate(roomId: "r1", elements: [])), by: s("dave"), .badParameter),
        BadInput("batch over 100", .queueBatchUpdate(QueueBatchUpdate(roomId: "r1", elements: (0 ... 100).map { QueueEntry(key: "k\($0)", value: "") })), by: s("dave"), .badParameter),
        BadInput("batch oversize value", .queueBatchUpdate(QueueBatchUpdate(roomId: "r1", elements: [QueueEntry(key: "k", value: .bytes(4097))])), by: s("dave"), .badParameter),
        BadInput("batch not entered", .queueBatchUpdate(QueueBatchUpdate(roomId: "r1", elements: [QueueEntry(key: "k", value: "")])), by: s("ghost"), .notEntered),
        BadInput("poll empty queue", .queuePoll(roomId: "r1", key: ""), by: s("dave"), .queueElementNotFound),
        BadInput("poll oversize key", .queuePoll(roomId: "r1", key: .bytes(129)), by: s("dave"), .badParameter),
        BadInput("poll unknown room", .queuePoll(roomId: "zz", key: ""), .roomNotFound),
        BadInput("list not entered", .queueList(roomId: "r1"), by: s("ghost"), .notEntered),
        BadInput("list closed room", .queueList(roomId: "gone"), .roomClosed),
        BadInput("drop not entered", .queueDrop(roomId: "r1"), by: s("ghost"), .notEntered),
        BadInput("drop unknown room", .queueDrop(roomId: "zz"), .roomNotFound),
    ]

    @Test("Invariant 5: bad input gets its code and leaves the snapshot byte-identical", arguments: cases)
    func rejected(_ bad: BadInput) {
        var shard = Self.fixture()
        shard.expectRejected(bad.command, as: bad.actor, bad.code)
    }

    @Test("Every command kind has at least one bad-input case")
    func everyCommandCovered() {
        func tag(_ c: RoomCommand) -> UInt8 { c.encoded()[0] }
        let covered = Set(Self.cases.map { tag($0.command) })
        let expected = Set<UInt8>(1 ... 30).union([37, 39])  // 37: setSendBudget (A1); 39: setHistoryWindow (D1)
        #expect(covered == expected, "missing tags: \(expected.subtracting(covered).sorted())")
    }

    @Test("An entry time outside 0 … year 9999 is refused before anything runs")
    func forgedTimestamp() {
        var shard = Self.fixture()
        let before = shard.state.snapshot()
        for time in [Int64.min, -1, RoomsState.latestTimestamp + 1, Int64.max] {
            let outcome = shard.state.apply(.setGlobalMute(GlobalMute(userId: "dave", enable: true, minutes: 5)),
                                            context: ApplyContext(commandIndex: 1, timestamp: time, actor: .appServer))
            #expect(outcome.errorCode == .badParameter && outcome.events.isEmpty)
        }
        #expect(shard.state.snapshot() == before)
    }

    @Test("M1 fixed-member limit and Q full queue are rejected without change")
    func limitsRejected() {
        var limits = RoomLimits()
        limits.maxFixedMembers = 5
        var shard = TestShard(limits: limits)
        shard.createRoom()
        for u in ["owner", "a", "b", "c", "d", "e"] { shard.enter(u) }
        for u in ["a", "b", "c", "d"] { shard.user("owner", .markCommon(MemberUpdate(roomId: "r1", userId: u))) }
        for cmd in [RoomCommand.markCommon(MemberUpdate(roomId: "r1", userId: "e")),
                    .markManager(MemberUpdate(roomId: "r1", userId: "e")),
                    .setBlocked(MemberUpdate(roomId: "r1", userId: "e")),
                    .setMuted(MemberUpdate(roomId: "r1", userId: "e"))] {
            shard.expectRejected(cmd, as: TestShard.session("owner"), .tooManyFixedMembers)
        }
        shard.run(.queueInit(roomId: "r1", maxSize: 2))
        shard.user("a", .queueOffer(QueueOffer(roomId: "r1", key: "1", value: "")))
        shard.user("a", .queueOffer(QueueOffer(roomId: "r1", key: "2", value: "")))
        shard.expectRejected(.queueOffer(QueueOffer(roomId: "r1", key: "3", value: "")), as: TestShard.session("a"),
                             .queueFull)
        shard.expectRejected(.queueInit(roomId: "r1", maxSize: 1), .badParameter)
        #expect(shard.user("a", .queueOffer(QueueOffer(roomId: "r1", key: "2", value: "new"))).isSuccess,
                "updating an existing key needs no room")
    }
}
