/// The fields `updateChatroomInfo` can change; nil leaves a field as it is.
public struct RoomInfoUpdate: Sendable, Hashable {
    public var name: String?
    public var announcement: String?
    public var broadcastUrl: String?
    public var ext: String?
    /// 0 anyone, 1 managers.
    public var queueLevel: Int?

    public init(name: String? = nil, announcement: String? = nil, broadcastUrl: String? = nil, ext: String? = nil, queueLevel: Int? = nil) {
        self.name = name
        self.announcement = announcement
        self.broadcastUrl = broadcastUrl
        self.ext = ext
        self.queueLevel = queueLevel
    }
}
