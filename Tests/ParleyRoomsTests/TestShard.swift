import Testing
@testable import ParleyRooms

/// A shard under test: a `RoomsState` with a log index and a clock the test moves by hand.
struct TestShard {
    var state: RoomsState
    var time: Int64 = 1_700_000_000_000
    var index: UInt64 = 0

    init(limits: RoomLimits = RoomLimits(), policy: AppPolicy = AppPolicy()) {
        state = RoomsState(limits: limits, policy: policy)
    }

    static func session(_ user: String, _ n: Int = 1, edge: String = "edge-1", mode: AuthMode = .imSession)
        -> CommandActor {
        .session(SessionIdentity(userId: user, authMode: mode, sessionId: "\(user)#\(n)", edgeId: edge))
    }

    @discardableResult
    mutating func run(_ command: RoomCommand, as actor: CommandActor = .appServer) -> ApplyOutcome {
        index += 1
        time += 1
        return state.apply(command, context: ApplyContext(commandIndex: index, timestamp: time, actor: actor))
    }

    @discardableResult
    mutating func user(_ user: String, _ command: RoomCommand, device: Int = 1) -> ApplyOutcome {
        run(command, as: Self.session(user, device))
    }

    /// A room "r1" created by "owner" (with an online owner unless told otherwise).
    @discardableResult
    mutating func createRoom(_ roomId: String = "r1", creator: String = "owner",
                             level: QueueModificationLevel = .anyone) -> ApplyOutcome {
        run(.createRoom(CreateRoom(roomId: roomId, creator: creator, name: "Room \(roomId)",
                                   queueModificationLevel: level)))
    }

    @discardableResult
    mutating func enter(_ user: String, _ roomId: String = "r1", device: Int = 1, edge: String = "edge-1",
                        mode: AuthMode = .imSession, nickname: String = "", roomExt: String = "",
                        notifyExt: String = "") -> ApplyOutcome {
        let nick = nickname.isEmpty ? "nick-\(user)" : nickname
        return run(.enter(EnterRoom(roomId: roomId, nickname: nick, avatar: "https://a/\(user)", roomExt: roomExt,
                                    roomNotifyExt: notifyExt)),
                   as: Self.session(user, device, edge: edge, mode: mode))
    }

    /// A room with an online owner, a manager "boss", an ordinary "carol" and visitors "dave", "erin".
    static func populated(policy: AppPolicy = AppPolicy()) -> TestShard {
        var shard = TestShard(policy: policy)
        shard.createRoom()
        for u in ["owner", "boss", "carol", "dave", "erin"] { shard.enter(u) }
        shard.user("owner", .markManager(MemberUpdate(roomId: "r1", userId: "boss")))
        shard.user("owner", .markCommon(MemberUpdate(roomId: "r1", userId: "carol")))
        return shard
    }

    func member(_ userId: String, _ roomId: String = "r1") -> MemberView? {
        guard let room = state.rooms[roomId], let m = room.members[userId] else { return nil }
        return room.memberView(m, now: time)
    }

    /// Applies a command that must fail with `code` and leave the snapshot byte-identical.
    mutating func expectRejected(_ command: RoomCommand, as actor: CommandActor = .appServer,
                                 _ code: RoomErrorCode, sourceLocation: SourceLocation = #_sourceLocation) {
        let before = state.snapshot()
        let outcome = run(command, as: actor)
        #expect(outcome.errorCode == code, "\(command)", sourceLocation: sourceLocation)
        #expect(outcome.events.isEmpty, sourceLocation: sourceLocation)
        #expect(state.snapshot() == before, "state changed by a rejected \(command)", sourceLocation: sourceLocation)
    }
}

extension ApplyOutcome {
    var reply: RoomReply? { try? result.get() }
    var notifications: [RoomNotification] { events.compactMap(\.notification) }
    var notificationTypes: [NotificationType] { notifications.map(\.type) }
    var isSuccess: Bool { errorCode == nil }
}

extension String {
    static func bytes(_ n: Int) -> String { String(repeating: "x", count: n) }
}
