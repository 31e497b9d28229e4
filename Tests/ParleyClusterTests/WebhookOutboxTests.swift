import ParleyIM
import ParleyRooms
import ParleyShardState
import ParleyWire
import Testing

/// SPEC W2 / W4: a shard's webhook outbox as its replicas keep it — what an app wants is kept in log order with
/// a stable id, trimmed only by the cluster's `trim`, bounded, snapshotted, and the rooms behave exactly as
/// they would without it.
@Suite struct WebhookOutboxTests {
    static let app = "app"
    static func room(_ id: String, in app: String = WebhookOutboxTests.app) -> String { AppScope.scoped(id, in: app) }
    static func user(_ id: String) -> CommandActor {
        .session(SessionIdentity(userId: AppScope.scoped(id, in: app), sessionId: "s-\(id)", edgeId: "e1"))
    }

    /// A shard and the next command's index and time.
    struct Shard {
        var state = ShardState(rooms: RoomsState())
        var index: UInt64 = 0

        @discardableResult
        mutating func apply(_ command: ShardCommand, as actor: CommandActor = .appServer) -> ShardOutcome {
            index += 1
            return state.apply(command, context: ApplyContext(commandIndex: index, timestamp: 1_000_000 + Int64(index), actor: actor))
        }

        @discardableResult
        mutating func room(_ command: RoomCommand, as actor: CommandActor = .appServer) -> ApplyOutcome {
            apply(.room(command), as: actor).room!
        }

        var box: WebhookOutbox.Box? { state.webhooks.boxes[WebhookOutboxTests.app] }
    }

    /// The commands of a small room's life: made, entered, spoken in, muted silently and aloud, left.
    static let life: [(RoomCommand, CommandActor)] = [
        (.createRoom(CreateRoom(roomId: room("r"), creator: AppScope.scoped("ann", in: app), name: "r")), .appServer),
        (.createRoom(CreateRoom(roomId: room("r", in: "other"), creator: "x", name: "r")), .appServer),
        (.enter(EnterRoom(roomId: room("r"), nickname: "Ann")), user("ann")),
        (.enter(EnterRoom(roomId: room("r"), nickname: "Bob")), user("bob")),
        (.sendMessage(SendMessage(roomId: room("r"), body: "one")), user("ann")),
        (.setTempMute(MemberUpdate(roomId: room("r"), userId: AppScope.scoped("bob", in: app), duration: 60, needNotify: false)), .appServer),
        (.setTempMute(MemberUpdate(roomId: room("r"), userId: AppScope.scoped("bob", in: app), duration: 0)), .appServer),
        (.sendMessage(SendMessage(roomId: room("r"), body: "two")), user("bob")),
        (.exit(roomId: room("r")), user("bob")),
    ]

    @Test func W2_theOutboxKeepsWhatTheAppWantsInLogOrder() {
        var shard = Shard()
        shard.apply(.webhook(.subscribe(namespace: Self.app, kinds: [.message, .enter, .exit, .mute])))
        for (command, actor) in Self.life { shard.room(command, as: actor) }
        let box = try! #require(shard.box)
        let kept = box.pending.map { copy -> String in
            guard case .room(let activity) = copy.event else { return "\(copy.event)" }
            switch activity {
            case .message(_, let m): return "message \(m.body) seq \(m.seq)"
            case .entered(_, let u): return "enter \(AppScope.local(u))"
            case .left(_, let u, let why): return "exit \(AppScope.local(u)) \(why.name)"
            case .notification(_, let n): return "notification \(n.type.rawValue) seq \(n.seq)"
            default: return "\(activity)"
            }
        }
        // Not the creation (not asked for), not the other app's room; the silent mute with seq 0.
        #expect(kept == ["enter ann", "enter bob", "message one seq 3", "notification 314 seq 0", "notification 315 seq 4",
                         "message two seq 6", "exit bob exit"], "\(kept)")
        // Ids increase in log order and are unique.
        let positions = box.pending.map(\.position)
        #expect(positions == positions.sorted() && Set(positions).count == positions.count)
        #expect(box.pending.allSatisfy { $0.time == 1_000_000 + Int64($0.position.commandIndex) })
    }

    @Test func W2_theRoomsBehaveTheSameWhetherOrNotAnAppWantsCopies() {
        var plain = Shard()
        var copied = Shard()
        plain.apply(.webhook(.subscribe(namespace: "nobody", kinds: [])))
        copied.apply(.webhook(.subscribe(namespace: Self.app, kinds: WebhookCopyKinds(rawValue: 0x1FF))))
        for (command, actor) in Self.life {
            #expect(plain.room(command, as: actor) == copied.room(command, as: actor))
        }
        #expect(plain.state.rooms.snapshot() == copied.state.rooms.snapshot())
        #expect(plain.state.webhooks.isEmpty && !(copied.box?.pending.isEmpty ?? true))
    }

    @Test func W2_trimRemovesThroughAPositionAndCountsDeliveredOrDropped() {
        var shard = Shard()
        shard.apply(.webhook(.subscribe(namespace: Self.app, kinds: [.message])))
        shard.room(Self.life[0].0)
        shard.room(Self.life[2].0, as: Self.life[2].1)
        for i in 0..<6 { shard.room(.sendMessage(SendMessage(roomId: Self.room("r"), body: "m\(i)")), as: Self.user("ann")) }
        let pending = Array(shard.box!.pending)
        shard.apply(.webhook(.trim(namespace: Self.app, through: pending[1].position, delivered: true)))
        #expect(Array(shard.box!.pending) == Array(pending.dropFirst(2)) && shard.box!.delivered == 2)
        // A repeated or stale trim (a leader's call made twice) changes nothing.
        shard.apply(.webhook(.trim(namespace: Self.app, through: pending[0].position, delivered: true)))
        #expect(shard.box!.pending.count == 4 && shard.box!.delivered == 2)
        shard.apply(.webhook(.trim(namespace: Self.app, through: pending[3].position, delivered: false)))
        #expect(Array(shard.box!.pending) == Array(pending.dropFirst(4)) && shard.box!.dropped == 2)
        // Only the cluster trims: a client's command naming the outbox changes nothing.
        let before = shard.state.webhooks
        shard.apply(.webhook(.trim(namespace: Self.app, through: pending[5].position, delivered: true)), as: Self.user("ann"))
        shard.apply(.webhook(.subscribe(namespace: Self.app, kinds: [])), as: Self.user("ann"))
        #expect(shard.state.webhooks == before)
        // Narrowing what the app wants drops what it no longer wants; none removes the box.
        shard.apply(.webhook(.subscribe(namespace: Self.app, kinds: [.enter])))
        #expect(shard.box!.pending.isEmpty && shard.box!.kinds == [.enter])
        shard.apply(.webhook(.subscribe(namespace: Self.app, kinds: [])))
        #expect(shard.state.webhooks.isEmpty)
    }

    @Test func W4_aBoxHoldsAtMostItsBoundAndCountsWhatItDrops() {
        var shard = Shard()
        shard.apply(.webhook(.subscribe(namespace: Self.app, kinds: [.message])))
        shard.room(Self.life[0].0)
        shard.room(Self.life[2].0, as: Self.life[2].1)
        let over = 25
        for i in 0..<(WebhookOutbox.maxPending + over) {
            shard.room(.sendMessage(SendMessage(roomId: Self.room("r"), body: "m\(i)")), as: Self.user("ann"))
        }
        let box = shard.box!
        #expect(box.pending.count == WebhookOutbox.maxPending && box.dropped == UInt64(over))
        guard case .room(.message(_, let oldest)) = box.pending[0].event else { Issue.record("\(box.pending[0])"); return }
        #expect(oldest.body == "m\(over)")
    }

    @Test func W2_theOutboxIsInTheSnapshotAndAShardWithoutOneWritesTheOldForm() throws {
        var shard = Shard()
        for (command, actor) in Self.life { shard.room(command, as: actor) }
        // No box: the snapshot is what a node of peer protocol 9 reads (the rooms' alone, IM being empty).
        #expect(shard.state.snapshot() == shard.state.rooms.snapshot())
        shard.apply(.webhook(.subscribe(namespace: Self.app, kinds: WebhookCopyKinds(rawValue: 0x1FF))))
        for (command, actor) in Self.life.dropFirst(4) { shard.room(command, as: actor) }
        shard.apply(.webhook(.trim(namespace: Self.app, through: shard.box!.pending[0].position, delivered: false)))
        let restored = try ShardState(restoring: shard.state.snapshot())
        #expect(restored.webhooks == shard.state.webhooks && !restored.webhooks.isEmpty)
        #expect(restored.rooms.snapshot() == shard.state.rooms.snapshot())
        // Damage is refused, not half read.
        var bytes = shard.state.snapshot()
        bytes.removeLast(3)
        #expect(throws: (any Error).self) { try ShardState(restoring: bytes) }
    }

    @Test func W2_aOneToOneMessageIsKeptWhereItIsStoredOnce() throws {
        var shard = Shard()
        shard.apply(.webhook(.subscribe(namespace: Self.app, kinds: [.p2p])))
        let ann = AppScope.scoped("ann", in: Self.app), bob = AppScope.scoped("bob", in: Self.app)
        let send = ShardCommand.im(account: ann, .send(P2PSend(to: bob, clientMessageId: "c1", body: "hi bob")))
        guard case .im(.success) = shard.apply(send) else { Issue.record("the send failed"); return }
        // A resend with the same clientMessageId stores nothing and is not told again.
        shard.apply(send)
        let box = try #require(shard.box)
        #expect(box.pending.map(\.event) == [.im(ImMessageCopy(from: ann, to: bob, teamId: nil, clientMessageId: "c1", type: "text",
                                                               body: "hi bob", ext: "", seq: 1))])
        // The copy reads back from the snapshot.
        #expect(try ShardState(restoring: shard.state.snapshot()).webhooks == shard.state.webhooks)
    }

    @Test func W2_theOutboxCommandsAndAnswerReadBack() throws {
        let commands: [ShardCommand] = [
            .webhook(.subscribe(namespace: Self.app, kinds: [.message, .queue])),
            .webhook(.subscribe(namespace: "", kinds: [])),
            .webhook(.trim(namespace: Self.app, through: WebhookPosition(commandIndex: 77, ordinal: 3), delivered: true)),
            .webhook(.trim(namespace: Self.app, through: WebhookPosition(commandIndex: 1 << 40, ordinal: 0), delivered: false)),
        ]
        for c in commands { #expect(try ShardCommand(decoding: c.encoded()) == c) }
        #expect(try ShardOutcome(decoding: ShardOutcome.webhook.encoded()) == .webhook)
        #expect(!ShardState.isRead(commands[0]))
        // An unknown outbox command tag is refused.
        #expect(throws: CodecError.self) { try ShardCommand(decoding: [201, 9]) }
    }
}
