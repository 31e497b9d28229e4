/// The public face of one Raft node: feed it ticks, messages and requests, then collect a `Ready`.
/// Not thread-safe; use it from one thread or actor.
public final class RawNode {
    public init(config: RaftConfig, storage: RaftStorage) throws {
        try config.validate()
        self.config = config
        self.storage = storage
    }
    let config: RaftConfig
    let storage: RaftStorage
    public func tick() {}
    public func campaign() throws {}
    public func propose(_ data: [UInt8]) throws {}
    public func proposeConfChange(_ cc: ConfChange) throws {}
    public func step(_ message: Message) throws {}
    public func readIndex(_ context: [UInt8]) {}
    public func transferLeadership(to: NodeID) {}
    public func applyConfChange(_ cc: ConfChange) -> ConfState { ConfState() }
    public func reportUnreachable(_ id: NodeID) {}
    public func reportSnapshot(_ id: NodeID, success: Bool) {}
    public var hasReady: Bool { false }
    public func ready() -> Ready { Ready() }
    public func advance(_ ready: Ready) {}
    public var status: RaftStatus {
        RaftStatus(id: config.id, hardState: HardState(), softState: SoftState(leader: 0, role: .follower),
                   applied: 0, lastIndex: 0, firstIndex: 1, confState: ConfState(), progress: [:],
                   leadTransferee: 0, isQuiesced: false, uncommittedBytes: 0)
    }
}
