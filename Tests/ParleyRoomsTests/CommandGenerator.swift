@testable import ParleyRooms

/// SplitMix64: a tiny, seeded, deterministic generator for property tests.
struct SplitMix64 {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

/// Random commands from many actors over a few rooms, including bad input now and then.
struct CommandGenerator {
    var rng: SplitMix64
    var time: Int64 = 1_700_000_000_000
    var index: UInt64 = 0
    let rooms = ["r0", "r1", "r2", "r3", "zz"]
    let users = (0 ..< 10).map { "u\($0)" }

    init(seed: UInt64) { rng = SplitMix64(state: seed) }

    private mutating func text(_ max: Int = 12) -> String {
        // Mostly short, sometimes exactly at or just over common limits.
        switch rng.below(40) {
        case 0: return String(repeating: "x", count: 33)
        case 1: return String(repeating: "y", count: 129)
        case 2: return ""
        default: return String(repeating: rng.pick(["a", "b", "é", "字"]), count: rng.below(max) + 1)
        }
    }

    private mutating func sessionActor(_ user: String) -> CommandActor {
        let n = Int(user.dropFirst())!
        let mode: AuthMode = n == 9 ? .anonymous : (n % 3 == 0 ? .independent : .imSession)
        let device = rng.below(2) + 1
        return .session(SessionIdentity(userId: user, authMode: mode, sessionId: "\(user)#\(device)",
                                        edgeId: "e\((n + device) % 3)"))
    }

    private mutating func member(_ room: String) -> MemberUpdate {
        MemberUpdate(roomId: room, userId: rng.pick(users), enable: rng.chance(70),
                     duration: rng.chance(60) ? 0 : UInt64(rng.below(5)), needNotify: rng.chance(85),
                     notifyExt: text())
    }

    /// The next command and its entry context.
    mutating func next() -> (RoomCommand, ApplyContext) {
        index += 1
        time += Int64(rng.below(20_000))
        let room = rng.chance(5) ? "zz" : rng.pick(Array(rooms.dropLast()))
        if index <= 4 {
            // Every sequence starts with its rooms in place.
            let id = rooms[Int(index) - 1]
            return (.createRoom(CreateRoom(roomId: id, creator: "u\(index)", name: id)),
                    ApplyContext(commandIndex: index, timestamp: time, actor: .appServer))
        }
        let user = rng.pick(users)
        var actor = rng.chance(12) ? CommandActor.appServer : sessionActor(user)
        let command: RoomCommand
        let kind = rng.below(100)
        switch kind {
        case 0 ..< 3:
            command = .createRoom(CreateRoom(roomId: rng.pick(Array(rooms.dropLast())), creator: rng.pick(users),
                                             name: text(),
                                             queueModificationLevel: rng.chance(50) ? .anyone : .managers))
            if rng.chance(80) { actor = .appServer }
        case 3 ..< 5:
            // Closing is rare and reopening common, so most rooms stay usable.
            command = rng.chance(15) ? .closeRoom(roomId: room, ext: text()) : .reopenRoom(roomId: room)
            actor = .appServer
        case 5 ..< 6:
            command = .setRoomPolicy(RoomPolicyUpdate(roomId: room, enterExitNotifications: rng.chance(50),
                                                      devicePolicy: rng.chance(50) ? .singleDevice : nil))
        case 6 ..< 7:
            var p = AppPolicy()
            p.oneRoomPerUser = rng.chance(30)
            p.memberChangeEvents = rng.chance(50)
            p.storeEnterExitInHistory = rng.chance(50)
            p.devicePolicy = rng.chance(50) ? .multiDevice : .singleDevice
            command = rng.chance(50) ? .setAppPolicy(p) : .setScopedAppPolicy(namespace: rng.chance(50) ? "" : "app", p)
        case 7 ..< 25:
            command = .enter(EnterRoom(roomId: room, nickname: text(), avatar: text(), roomExt: text(),
                                       roomNotifyExt: text(), replacing: rng.chance(20) ? text() : ""))
        case 25 ..< 31: command = .exit(roomId: room)
        case 31 ..< 32: command = .sessionLost(edgeId: "e\(rng.below(3))"); actor = .appServer
        case 32 ..< 55:
            command = .sendMessage(SendMessage(roomId: room, type: rng.chance(95) ? .text : .notification,
                                               clientMessageId: text(), body: text(), fromUser: user))
        case 55 ..< 57:
            command = .fetchHistory(HistoryQuery(roomId: room, startTime: rng.chance(50) ? 0 : time - 50_000,
                                                 limit: rng.below(120), ascending: rng.chance(50),
                                                 types: rng.chance(50) ? [] : [.text]))
        case 57 ..< 59:
            command = .fetchMembers(FetchMembers(roomId: room, kind: MemberQueryKind(rawValue: UInt8(rng.below(4)))!,
                                                 anchor: UInt64(rng.below(6)), limit: rng.below(12)))
        case 59 ..< 60: command = .fetchMembersByIds(RoomUsers(roomId: room, userIds: Array(users.prefix(rng.below(4)))))
        case 60 ..< 61: command = .fetchRoomInfo(roomId: room)
        case 61 ..< 63:
            command = .updateMyMemberInfo(UpdateMyMemberInfo(roomId: room, nickname: rng.chance(50) ? text() : nil,
                                                             ext: rng.chance(50) ? text() : nil))
        case 63 ..< 66: command = .markManager(member(room))
        case 66 ..< 69: command = .markCommon(member(room))
        case 69 ..< 71: command = .setBlocked(member(room))
        case 71 ..< 73: command = .setMuted(member(room))
        case 73 ..< 76: command = .setTempMute(member(room))
        case 76 ..< 78: command = .kick(member(room))
        case 78 ..< 80: command = .setRoomMute(RoomSwitch(roomId: room, enable: rng.chance(50)))
        case 80 ..< 81:
            command = .updateAllowlist(RoomSwitch(roomId: room, enable: rng.chance(60), userIds: [rng.pick(users)]))
        case 81 ..< 82:
            command = .setGlobalMute(GlobalMute(userId: user, enable: rng.chance(60), minutes: UInt64(rng.below(3))))
            actor = .appServer
        case 82 ..< 83: command = .queueInit(roomId: room, maxSize: rng.below(8)); actor = .appServer
        case 83 ..< 90:
            command = .queueOffer(QueueOffer(roomId: room, key: "k\(rng.below(8))", value: text(),
                                             transient: rng.chance(60)))
        case 90 ..< 92:
            command = .queueBatchUpdate(QueueBatchUpdate(
                roomId: room, elements: (0 ..< rng.below(4)).map { _ in QueueEntry(key: "k\(rng.below(10))", value: text()) }))
        case 92 ..< 96: command = .queuePoll(roomId: room, key: rng.chance(40) ? "" : "k\(rng.below(10))")
        case 96 ..< 98: command = .queueList(roomId: room)
        case 98: command = .queueDrop(roomId: room)
        default:
            // E3 slots (a home shard's commands) and the RC one-room policy's yield.
            command = rng.pick([RoomCommand.claimRoomSlot(roomId: room), .releaseRoomSlot(roomId: room), .yieldRoom(roomId: room)])
        }
        if case .session = actor, (63 ..< 81).contains(kind), rng.chance(40) { actor = .appServer }
        return (command, ApplyContext(commandIndex: index, timestamp: time, actor: actor))
    }
}
