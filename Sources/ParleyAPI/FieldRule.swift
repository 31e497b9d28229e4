import ParleyRooms

/// Checks the API makes before anything is submitted: the fields that choose where a command goes (a room
/// id picks the shard) and the enumerations JSON carries as strings. Everything else the state machine
/// checks itself, with its own codes.
enum FieldRule {
    static let maxIdBytes = RoomLimits().maxIdBytes

    static func roomId(_ id: String) throws(APIError) {
        try self.id(id, "roomId")
    }

    static func id(_ value: String, _ name: String) throws(APIError) {
        guard (1...maxIdBytes).contains(value.utf8.count) else {
            throw APIError(.badField, "\(name) must be 1 … \(maxIdBytes) bytes")
        }
    }

    static func count<T>(_ list: [T], _ range: ClosedRange<Int>, _ name: String) throws(APIError) {
        guard range.contains(list.count) else {
            throw APIError(.badField, "\(name) must hold \(range.lowerBound) … \(range.upperBound) items")
        }
    }

    static func pick<T>(_ value: String, _ table: [String: T], _ name: String) throws(APIError) -> T {
        guard let v = table[value] else {
            throw APIError(.badField, "\(name) must be one of \(table.keys.sorted().joined(separator: ", "))")
        }
        return v
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
