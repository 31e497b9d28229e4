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

    public init(rooms: RoomsState, im: ImShardState = ImShardState(limits: ShardState.imLimits)) {
        self.rooms = rooms
        self.im = im
    }

    public mutating func apply(_ command: ShardCommand, context: ApplyContext) -> ShardOutcome {
        switch command {
        case .room(let c):
            return .room(rooms.apply(c, context: context))
        case .im(let account, let c):
            let result = applyIm(c, account: account, context: context)
            if case .success(let applied) = result { feed(applied) }
            return .im(result)
        }
    }

    /// Issue 34: room reads (`RoomCommand.isReadOnly`) and IM reads leave the log.
    public static func isRead(_ command: ShardCommand) -> Bool {
        switch command {
        case .room(let c): return c.isReadOnly
        case .im(_, .read): return true
        case .im: return false
        }
    }

    public mutating func takeImFeed() -> [ImFeedEvent] {
        defer { imFeed.removeAll() }
        return imFeed
    }

    private mutating func feed(_ applied: ImApplied) {
        switch applied {
        case .user(let events), .effects(let events, _): imFeed += events.map(ImFeedEvent.user)
        case .sent(let s): imFeed += s.events.map(ImFeedEvent.user)
        case .team(let o):
            for e in o.events { imFeed.append(.team(e, members: im.team(e.teamId)?.memberList ?? [])) }
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
            case .effects, .screenedEffects, .confirm: return .failure(ImError(.noPermission, "only the cluster relays effects"))
            default: byAppServer = false
            }
        }
        return im.apply(c, context: ImContext(actor: account, time: context.timestamp, byAppServer: byAppServer))
    }

    /// "PSHS": a shard snapshot holding IM state. While a shard has none its snapshot is the rooms' alone,
    /// byte for byte what it was before IM existed, so nodes of the previous release still read it.
    static let magic: [UInt8] = [0x50, 0x53, 0x48, 0x53]
    static let version: UInt8 = 1

    public func snapshot() -> [UInt8] {
        let roomBytes = rooms.snapshot()
        guard !im.isEmpty else { return roomBytes }
        var w = ByteWriter()
        for b in Self.magic { w.write(b) }
        w.write(Self.version)
        w.write(bytes: roomBytes)
        w.write(bytes: im.snapshot())
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
        guard version == Self.version else { throw CodecError.badVersion(version) }
        let rooms = try RoomsState(restoring: try r.readBytes())
        let im = try ImShardState(restoring: try r.readBytes(), limits: Self.imLimits)
        guard r.isAtEnd else { throw CodecError.trailingBytes(r.remaining) }
        self.init(rooms: rooms, im: im)
    }

    public static func refusedRequest(_ why: RequestRefusal) -> ShardOutcome {
        .room(RoomsState.refusedRequest(why))
    }
}
