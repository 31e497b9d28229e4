/// What a single membership change does.
public enum ConfChangeType: UInt8, Sendable {
    case addVoter, addLearner, removeNode
}

/// One change to one member.
public struct ConfChangeSingle: Sendable, Hashable {
    public var type: ConfChangeType
    public var node: NodeID

    public init(type: ConfChangeType, node: NodeID) {
        self.type = type
        self.node = node
    }
}

/// How a change moves between configurations.
public enum ConfChangeTransition: UInt8, Sendable {
    /// One voter change is applied directly; several go through a joint configuration that is left
    /// automatically.
    case auto
    /// Enter a joint configuration and leave it automatically once applied.
    case jointImplicit
    /// Enter a joint configuration and stay there until an empty `ConfChange` leaves it.
    case jointExplicit
}

/// Why bytes could not be decoded as a `ConfChange`.
public struct ConfChangeDecodingError: Error, Equatable, CustomStringConvertible {
    public var description: String
}

/// A membership change. An empty `changes` with transition `.auto` leaves a joint configuration.
public struct ConfChange: Sendable, Hashable {
    public var transition: ConfChangeTransition
    public var changes: [ConfChangeSingle]

    public init(transition: ConfChangeTransition = .auto, changes: [ConfChangeSingle]) {
        self.transition = transition
        self.changes = changes
    }

    /// The change that leaves a joint configuration.
    public static let leaveJoint = ConfChange(transition: .auto, changes: [])

    /// True if this change leaves a joint configuration.
    public var isLeaveJoint: Bool { changes.isEmpty && transition == .auto }

    /// Whether this change must go through a joint configuration, and if so whether it is left
    /// automatically. `nil` means it is applied as a simple change.
    public var jointAutoLeave: Bool? {
        guard transition != .auto || changes.count > 1 else { return nil }
        return transition != .jointExplicit
    }

    /// Compact encoding: transition (1 byte), count (4 bytes LE), then per change type (1) + node (8 LE).
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(5 + changes.count * 9)
        out.append(transition.rawValue)
        withUnsafeBytes(of: UInt32(changes.count).littleEndian) { out.append(contentsOf: $0) }
        for change in changes {
            out.append(change.type.rawValue)
            withUnsafeBytes(of: change.node.littleEndian) { out.append(contentsOf: $0) }
        }
        return out
    }

    /// Decodes what `encoded()` produced; throws on any malformed input.
    public init(decoding bytes: [UInt8]) throws {
        guard bytes.count >= 5 else { throw ConfChangeDecodingError(description: "conf change shorter than its header") }
        guard let transition = ConfChangeTransition(rawValue: bytes[0]) else {
            throw ConfChangeDecodingError(description: "unknown conf change transition \(bytes[0])")
        }
        let count = Int(Self.readLittleEndian(bytes, at: 1, width: 4))
        guard bytes.count == 5 + count * 9 else {
            throw ConfChangeDecodingError(description: "conf change length \(bytes.count) does not match \(count) changes")
        }
        var changes: [ConfChangeSingle] = []
        changes.reserveCapacity(count)
        for i in 0..<count {
            let at = 5 + i * 9
            guard let type = ConfChangeType(rawValue: bytes[at]) else {
                throw ConfChangeDecodingError(description: "unknown conf change type \(bytes[at])")
            }
            changes.append(ConfChangeSingle(type: type, node: Self.readLittleEndian(bytes, at: at + 1, width: 8)))
        }
        self.init(transition: transition, changes: changes)
    }

    private static func readLittleEndian(_ bytes: [UInt8], at start: Int, width: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<width { value |= UInt64(bytes[start + i]) << (8 * UInt64(i)) }
        return value
    }
}
