/// One key/value element of a room's queue (SPEC Q1).
public struct QueueElement: Sendable, Hashable, Codable {
    public var key: String
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}
