import ParleyRaft
import ParleyRooms
import ParleyWire

/// The room events of one applied log entry of a shard.
public struct ShardEventBatch: Sendable, Hashable, BinaryCodable {
    /// The entry's log index: the same on every replica, so an edge can move between replicas without
    /// missing or repeating anything.
    public var index: UInt64
    public var events: [RoomEvent]

    public init(index: UInt64, events: [RoomEvent]) {
        self.index = index
        self.events = events
    }

    public func encode(to w: inout ByteWriter) {
        w.write(index)
        w.write(events)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        index = try r.readUInt64()
        events = try r.readArray()
    }
}

/// One answer of a shard's event feed (`RaftDriver.events`): what was applied after the asked cursor.
public struct ShardEventPage: Sendable, Hashable, BinaryCodable {
    public var shard: ShardID
    /// Ascending by index, every index greater than the asked cursor.
    public var batches: [ShardEventBatch]
    /// Ask again after this index.
    public var cursor: UInt64
    /// True when entries after the asked cursor are no longer held by the replica (it restarted, caught up
    /// by snapshot, or the edge fell too far behind): the edge must fill its rooms from history.
    public var gap: Bool
    /// The replica's view of the shard leader (0 = none): polls should go there.
    public var leader: NodeID

    public init(shard: ShardID, batches: [ShardEventBatch], cursor: UInt64, gap: Bool, leader: NodeID) {
        self.shard = shard
        self.batches = batches
        self.cursor = cursor
        self.gap = gap
        self.leader = leader
    }

    public func encode(to w: inout ByteWriter) {
        w.write(shard)
        w.write(batches)
        w.write(cursor)
        w.write(gap)
        w.write(leader)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        shard = try r.readInt()
        batches = try r.readArray()
        cursor = try r.readUInt64()
        gap = try r.readBool()
        leader = try r.readUInt64()
    }
}
