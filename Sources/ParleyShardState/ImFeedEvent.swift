import ParleyIM
import ParleyRooms
import ParleyWire

/// Issue 19: what an applied IM command has for users' online devices, in a shard's event feed beside the
/// room events: an event for one user, or a team log item for the team's members as they were when it
/// applied (plus those it names in `alsoTo`: who just left, was kicked, or the whole team on a dismiss).
public enum ImFeedEvent: Sendable, Hashable, BinaryCodable {
    case user(ImEvent)
    case team(TeamEvent, members: [String])
    /// Issue 38: a supergroup's log item, without its member list: each edge delivers it to the devices that
    /// follow the team there once it checked they are members (`ImRead.memberships`), and to those in `alsoTo`.
    case superTeam(TeamEvent)

    /// Every account whose devices hear it.
    public var accounts: [String] {
        switch self {
        case .user(let e): [e.account]
        case .team(let e, let members): members + e.alsoTo
        case .superTeam(let e): e.alsoTo
        }
    }

    /// SPEC D1: estimated bytes held for this event: a message's body and ext, a team event's audience, and a
    /// fixed part for the rest (`MemoryFootprint`).
    public var estimatedBytes: Int {
        switch self {
        case .user(let e):
            guard case .item(let item) = e.kind, case .message(let m, _) = item.kind else { return 128 }
            return 128 + MemoryFootprint.of(m.body) + MemoryFootprint.of(m.ext)
        case .team(let e, let members):
            var bytes = 128 + MemoryFootprint.of(members) + MemoryFootprint.of(e.alsoTo)
            if case .message(let m) = e.item.kind { bytes += MemoryFootprint.of(m.body) + MemoryFootprint.of(m.ext) }
            return bytes
        case .superTeam(let e):
            var bytes = 128 + MemoryFootprint.of(e.alsoTo) + MemoryFootprint.of(e.noAlert)
            if case .message(let m) = e.item.kind { bytes += MemoryFootprint.of(m.body) + MemoryFootprint.of(m.ext) }
            return bytes
        }
    }

    public func encode(to w: inout ByteWriter) {
        switch self {
        case .user(let e): w.write(UInt8(1)); ImAnswerCodec.write([e], into: &w)
        case .team(let e, let members): w.write(UInt8(2)); ImAnswerCodec.write(e, into: &w); w.write(members)
        // Only a supergroup makes tag 3, and one exists only once every node reads it.
        case .superTeam(let e): w.write(UInt8(3)); ImAnswerCodec.write(e, into: &w)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 1:
            let events = try ImAnswerCodec.readEvents(&r)
            guard events.count == 1 else { throw .invalidValue("one IM event") }
            self = .user(events[0])
        case 2: self = .team(try ImAnswerCodec.readTeamEvent(&r), members: try r.readStrings())
        case 3: self = .superTeam(try ImAnswerCodec.readTeamEvent(&r))
        case let tag: throw .badTag("IM feed event", UInt64(tag))
        }
    }

    public static func == (a: ImFeedEvent, b: ImFeedEvent) -> Bool { a.encoded() == b.encoded() }
    public func hash(into h: inout Hasher) { h.combine(encoded()) }
}
