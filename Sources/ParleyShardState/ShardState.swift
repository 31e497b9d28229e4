import ParleyIM
import ParleyRooms
import ParleyWire

/// What one shard's Raft group replicates (docs/im.md): the rooms that hash to it and, beside them, the IM
/// state of the users and teams that hash to it. Both apply in log order with the entry's time.
public struct ShardState: ReplicatedMachine {
    public typealias Command = ShardCommand
    public typealias Outcome = ShardOutcome

    public var rooms: RoomsState
    public internal(set) var im: ImShardState
    /// SPEC W2: what the apps' after-event callbacks have yet to deliver.
    public internal(set) var webhooks: WebhookOutbox
    /// What the IM commands applied since the last `takeImFeed()` have for users' devices (not state: the
    /// host moves it into the shard's event feed right after each command).
    private var imFeed: [ImFeedEvent] = []

    /// The IM limits of every shard. Accounts and team ids arrive app-scoped (`AppScope`: an app key of at
    /// most 64 bytes, U+001F, then the app's own id of at most 128, checked at the edge and the API).
    public static let imLimits: ImLimits = {
        var l = ImLimits()
        l.maxAccountBytes = 64 + 1 + 128
        l.maxTeamIdBytes = 64 + 1 + 128
        return l
    }()

    public init(rooms: RoomsState, im: ImShardState = ImShardState(limits: ShardState.imLimits),
                webhooks: WebhookOutbox = WebhookOutbox()) {
        self.rooms = rooms
        self.im = im
        self.webhooks = webhooks
    }

    public mutating func apply(_ command: ShardCommand, context: ApplyContext) -> ShardOutcome {
        switch command {
        case .room(let c):
            guard !webhooks.isEmpty else { return .room(rooms.apply(c, context: context)) }
            rooms.collectsActivity = true
            let outcome = rooms.apply(c, context: context)
            rooms.collectsActivity = false
            let activity = rooms.takeActivity()
            if !activity.isEmpty { webhooks.keep(activity.map(WebhookEvent.room), context: context) }
            return .room(outcome)
        case .im(let account, let c):
            let result = applyIm(c, account: account, context: context)
            if case .success(let applied) = result {
                feed(applied)
                if !webhooks.isEmpty {
                    let copies = Self.messages(in: applied)
                    if !copies.isEmpty { webhooks.keep(copies, context: context) }
                }
            }
            return .im(result)
        case .webhook(let c):
            // Only the cluster (the shard's leader) keeps the outbox.
            guard case .appServer = context.actor else { return .webhook }
            webhooks.apply(c)
            return .webhook
        }
    }

    /// Issue 34: room reads (`RoomCommand.isReadOnly`) and IM reads leave the log.
    public static func isRead(_ command: ShardCommand) -> Bool {
        switch command {
        case .room(let c): return c.isReadOnly
        case .im(_, .read): return true
        case .im, .webhook: return false
        }
    }

    /// Issue 38 item 5: whether the IM logs' items that leave memory are collected for the node's store (a
    /// node turns it on).
    public var collectsStoredImItems: Bool {
        get { im.collectsStoredItems }
        set { im.collectsStoredItems = newValue }
    }

    /// The IM logs' items that left memory since the last call, each log's in seq order.
    public mutating func takeStoredImItems() -> [ImStoredItem] { im.takeStoredItems() }

    public mutating func takeImFeed() -> [ImFeedEvent] {
        defer { imFeed.removeAll() }
        return imFeed
    }

    /// W2: the one-to-one message stored in its receiver's log (where it is sent, not the sender's copy a
    /// relay brings), or the team message stored in its team's log.
    static func messages(in applied: ImApplied) -> [WebhookEvent] {
        switch applied {
        case .sent(let s):
            return s.events.compactMap { e in
                guard case .item(let item) = e.kind, case .message(let m, _) = item.kind else { return nil }
                return .im(ImMessageCopy(from: m.from, to: m.to, teamId: nil, clientMessageId: m.clientMessageId, type: m.type,
                                         body: m.body, ext: m.ext, seq: item.seq))
            }
        case .team(let o):
            return o.events.compactMap { e in
                guard case .message(let m) = e.item.kind else { return nil }
                return .im(ImMessageCopy(from: m.from, to: nil, teamId: e.teamId, clientMessageId: m.clientMessageId,
                                         type: m.type, body: m.body, ext: m.ext, seq: e.item.seq))
            }
        case .user, .effects, .confirmed, .read:
            return []
        }
    }

    private mutating func feed(_ applied: ImApplied) {
        switch applied {
        case .user(let events), .effects(let events, _): imFeed += events.map(ImFeedEvent.user)
        case .sent(let s): imFeed += s.events.map(ImFeedEvent.user)
        case .team(let o):
            for e in o.events {
                let team = im.team(e.teamId)
                // A supergroup's events leave its thousands of members out (the edges check theirs); a dismissed
                // team is gone by now, so its dismiss goes by `alsoTo`, which names every member.
                if team?.info.type == .superTeam {
                    imFeed.append(.superTeam(e))
                } else {
                    imFeed.append(.team(e, members: team?.memberList ?? []))
                }
            }
        case .confirmed, .read: break
        }
    }

    private mutating func applyIm(_ c: ImShardCommand, account: String, context: ApplyContext) -> Result<ImApplied, ImError> {
        let byAppServer: Bool
        switch context.actor {
        case .appServer:
            byAppServer = true
        case .session(let s):
            // A client acts for its own user only, and never as the relay.
            guard s.userId == account else { return .failure(ImError(.noPermission, "a session acts only for its own user")) }
            switch c {
            case .effects, .screenedEffects, .confirm, .setLogWindow:
                return .failure(ImError(.noPermission, "only the cluster relays effects and sets the logs' window"))
            default: byAppServer = false
            }
        }
        return im.apply(c, context: ImContext(actor: account, time: context.timestamp, byAppServer: byAppServer))
    }

    /// "PSHS": a shard snapshot holding IM state. While a shard has none its snapshot is the rooms' alone,
    /// byte for byte what it was before IM existed, so nodes of the previous release still read it. Version 2
    /// adds the webhook outbox (W2), written only while some app has a box, which only a cluster whose every
    /// node reads it makes (`PeerProtocol.Feature.webhookCopies`).
    static let magic: [UInt8] = [0x50, 0x53, 0x48, 0x53]
    static let version: UInt8 = 1
    static let webhookVersion: UInt8 = 2

    public func snapshot() -> [UInt8] {
        let roomBytes = rooms.snapshot()
        guard !im.isEmpty || !webhooks.isEmpty else { return roomBytes }
        var w = ByteWriter()
        for b in Self.magic { w.write(b) }
        w.write(webhooks.isEmpty ? Self.version : Self.webhookVersion)
        w.write(bytes: roomBytes)
        w.write(bytes: im.snapshot())
        if !webhooks.isEmpty { w.write(webhooks) }
        return w.bytes
    }

    public init(restoring bytes: [UInt8]) throws {
        guard bytes.starts(with: Self.magic) else {
            self.init(rooms: try RoomsState(restoring: bytes))
            return
        }
        var r = ByteReader(bytes)
        for _ in Self.magic { _ = try r.readByte() }
        let version = try r.readByte()
        guard version == Self.version || version == Self.webhookVersion else { throw CodecError.badVersion(version) }
        let rooms = try RoomsState(restoring: try r.readBytes())
        let im = try ImShardState(restoring: try r.readBytes(), limits: Self.imLimits)
        let webhooks = version == Self.webhookVersion ? try r.read(WebhookOutbox.self) : WebhookOutbox()
        guard r.isAtEnd else { throw CodecError.trailingBytes(r.remaining) }
        self.init(rooms: rooms, im: im, webhooks: webhooks)
    }

    public static func refusedRequest(_ why: RequestRefusal) -> ShardOutcome {
        .room(RoomsState.refusedRequest(why))
    }
}
