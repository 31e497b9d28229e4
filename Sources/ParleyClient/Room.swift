/// A chat room as the server describes it (docs/protocol.md "Room"; SPEC R1).
public struct Room: Sendable, Hashable, Codable {
    public var roomId: String
    public var name: String
    public var announcement: String
    public var creator: String
    public var ext: String
    public var broadcastUrl: String
    /// Who may change the queue: 0 anyone, 1 managers (the seed's queueModificationLevel).
    public var queueLevel: Int
    public var isMuted: Bool
    public var isOpen: Bool
    public var onlineUserCount: Int
    /// The room's latest sequence number when this was read; a resume starts after it (X2).
    public var seq: Int64

    public init(roomId: String, name: String, announcement: String, creator: String, ext: String, broadcastUrl: String,
                queueLevel: Int, isMuted: Bool, isOpen: Bool, onlineUserCount: Int, seq: Int64) {
        self.roomId = roomId
        self.name = name
        self.announcement = announcement
        self.creator = creator
        self.ext = ext
        self.broadcastUrl = broadcastUrl
        self.queueLevel = queueLevel
        self.isMuted = isMuted
        self.isOpen = isOpen
        self.onlineUserCount = onlineUserCount
        self.seq = seq
    }
}
