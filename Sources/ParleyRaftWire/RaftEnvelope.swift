import ParleyRaft

/// A Raft message for one group, as nodes exchange them.
public struct RaftEnvelope: Sendable, Hashable {
    public var group: GroupID
    public var message: Message

    public init(group: GroupID, message: Message) {
        self.group = group
        self.message = message
    }
}
