import Foundation
import ParleyRooms

/// Checks the API makes before anything is submitted: the fields that choose where a command goes (a room
/// id picks the shard) and the enumerations JSON carries as strings. Everything else the state machine
/// checks itself, with its own codes.
enum FieldRule {
    static let maxIdBytes = RoomLimits().maxIdBytes

    /// A room id as the endpoints see it: in the caller's namespace (`ServerAPI.Call.decode`); its app-local
    /// part is what is limited.
    static func roomId(_ id: String) throws {
        try self.id(AppScope.local(id), "roomId")
    }

    /// Issue 33: the id of a room being made must read as what it is. No control characters (C0, DEL, C1), no
    /// invisible formatting (bidirectional overrides and marks, zero-width spaces and joiners, the BOM), and
    /// composed (Unicode NFC), so no two ids look alike while differing in bytes. Checked when a room is
    /// made, not when one is used: rooms made before keep working.
    static func newRoomId(_ local: String) throws {
        if let bad = local.unicodeScalars.first(where: { isControlOrInvisible($0) }) {
            throw APIError(.badField, "roomId must not contain U+\(String(bad.value, radix: 16, uppercase: true).leftPadded(to: 4))")
        }
        // Bytes compared: Swift's `==` on strings is canonical equivalence, which would call NFD and NFC equal.
        guard local.precomposedStringWithCanonicalMapping.utf8.elementsEqual(local.utf8) else {
            throw APIError(.badField, "roomId must be in Unicode NFC (composed) form")
        }
    }

    static func isControlOrInvisible(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F: return true  // controls
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true  // bidirectional formatting
        case 0x200B...0x200D, 0x2060, 0xFEFF: return true  // zero-width space, joiners, word joiner, BOM
        default: return false
        }
    }

    static func id(_ value: String, _ name: String) throws {
        guard (1...maxIdBytes).contains(value.utf8.count) else {
            throw APIError(.badField, "\(name) must be 1 … \(maxIdBytes) bytes")
        }
    }

    static func count<T>(_ list: [T], _ range: ClosedRange<Int>, _ name: String) throws {
        guard range.contains(list.count) else {
            throw APIError(.badField, "\(name) must hold \(range.lowerBound) … \(range.upperBound) items")
        }
    }

    static func pick<T>(_ value: String, _ table: [String: T], _ name: String) throws -> T {
        guard let v = table[value] else {
            throw APIError(.badField, "\(name) must be one of \(table.keys.sorted().joined(separator: ", "))")
        }
        return v
    }

    /// `pick` for an optional field. (The API throws untyped errors: typed throws called from the async
    /// endpoint closures crash Swift 6.3.1's coroutine splitting in release builds — signal 11.)
    static func pick<T>(optional value: String?, _ table: [String: T], _ name: String) throws -> T? {
        guard let value else { return nil }
        return try pick(value, table, name)
    }

    /// `pick` for every element of a list field.
    static func pick<T>(all values: [String], _ table: [String: T], _ name: String) throws -> [T] {
        var out: [T] = []
        for v in values { out.append(try pick(v, table, name)) }
        return out
    }

    static let queueLevels: [String: QueueModificationLevel] = ["anyone": .anyone, "managers": .managers]
    static let devicePolicies: [String: DevicePolicy] = ["single": .singleDevice, "multi": .multiDevice]
    static let memberKinds: [String: MemberQueryKind] = [
        "regular": .regular, "temp": .temp, "regularOnline": .regularOnline,
        "unregularReversed": .unregularReversedOrder,
    ]
    static let messageTypes: [String: MessageType] = [
        "text": .text, "image": .image, "audio": .audio, "video": .video, "location": .location, "file": .file,
        "tip": .tip, "custom": .custom,
    ]
    /// History filters may also ask for notifications, which no one can send (N2).
    static let historyTypes: [String: MessageType] = messageTypes.merging(["notification": .notification]) { a, _ in a }

    static func name<T: Equatable>(of value: T, in table: [String: T]) -> String {
        table.first { $0.value == value }?.key ?? "\(value)"
    }
}

extension String {
    /// Zeros in front up to `width` characters (hex code points in messages).
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
