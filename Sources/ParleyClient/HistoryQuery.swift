/// The seed's NIMHistoryMessageSearchOption.
public struct HistoryQuery: Sendable, Hashable {
    public enum Order: String, Sendable, Hashable { case desc, asc }
    /// Milliseconds; 0 starts from now.
    public var startTime: Int64
    /// At most 100.
    public var limit: Int
    public var order: Order
    /// nil fetches every type.
    public var types: [MessageType]?

    public init(startTime: Int64 = 0, limit: Int = 100, order: Order = .desc, types: [MessageType]? = nil) {
        self.startTime = startTime
        self.limit = limit
        self.order = order
        self.types = types
    }
}
