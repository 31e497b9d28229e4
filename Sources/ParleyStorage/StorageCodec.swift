import ParleyRaft

/// Encodes the small structured values the database keeps as blobs (a membership), little-endian with a
/// version byte so the layout can change later.
enum StorageCodec {
    static let confStateVersion: UInt8 = 1

    static func encode(_ cs: ConfState) -> [UInt8] {
        var out: [UInt8] = [confStateVersion, cs.autoLeave ? 1 : 0]
        for list in [cs.voters, cs.votersOutgoing, cs.learners, cs.learnersNext] {
            appendUInt32(UInt32(list.count), to: &out)
            for id in list { appendUInt64(id, to: &out) }
        }
        return out
    }

    static func decodeConfState(_ bytes: [UInt8]) throws -> ConfState {
        var at = 0
        func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard n >= 0, at + n <= bytes.count else { throw StorageError.corrupt("membership blob too short") }
            defer { at += n }
            return bytes[at..<(at + n)]
        }
        func u64(_ s: ArraySlice<UInt8>) -> UInt64 { s.reversed().reduce(0) { $0 << 8 | UInt64($1) } }
        guard try take(1).first == confStateVersion else { throw StorageError.corrupt("unknown membership version") }
        let autoLeave = try take(1).first == 1
        var lists: [[NodeID]] = []
        for _ in 0..<4 {
            let count = Int(u64(try take(4)))
            guard count <= (bytes.count - at) / 8 else { throw StorageError.corrupt("membership list too long") }
            lists.append(try (0..<count).map { _ in u64(try take(8)) })
        }
        guard at == bytes.count else { throw StorageError.corrupt("trailing bytes after membership") }
        return ConfState(voters: lists[0], votersOutgoing: lists[1], learners: lists[2],
                         learnersNext: lists[3], autoLeave: autoLeave)
    }

    private static func appendUInt32(_ v: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    private static func appendUInt64(_ v: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }
}

/// Why the database could not be used.
public enum StorageError: Error, Equatable, CustomStringConvertible {
    /// The stored data breaks an invariant (a gap in a log, an unreadable blob).
    case corrupt(String)
    /// A group that does not exist on this node was opened.
    case unknownGroup(GroupID)
    /// A group was created twice.
    case groupExists(GroupID)

    public var description: String {
        switch self {
        case .corrupt(let why): "storage is corrupt: \(why)"
        case .unknownGroup(let g): "no group \(g) on this node"
        case .groupExists(let g): "group \(g) already exists"
        }
    }
}
