import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyShardState
import ParleyPlacement

/// The room events of one applied log entry of a shard.
public struct ShardEventBatch: Sendable, Hashable, BinaryCodable {
    /// The entry's log index: the same on every replica, so an edge can move between replicas without
    /// missing or repeating anything.
    public var index: UInt64
    public var events: [RoomEvent]
    /// Issue 19: the entry's IM events. Not in the batch's own bytes (which nodes of the previous release
    /// read): a page carries them after everything else, and only when there are some.
    public var im: [ImFeedEvent]

    public init(index: UInt64, events: [RoomEvent], im: [ImFeedEvent] = []) {
        self.index = index
        self.events = events
        self.im = im
    }

    public func encode(to w: inout ByteWriter) {
        w.write(index)
        w.write(events)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        index = try r.readUInt64()
        events = try r.readArray()
        im = []
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
        // The IM events by batch position, only when some batch has them: a page without them is the bytes
        // of the previous release.
        let withIm = batches.indices.filter { !batches[$0].im.isEmpty }
        guard !withIm.isEmpty else { return }
        w.write(UInt64(withIm.count))
        for i in withIm { w.write(i); w.write(batches[i].im) }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        shard = try r.readInt()
        batches = try r.readArray()
        cursor = try r.readUInt64()
        gap = try r.readBool()
        leader = try r.readUInt64()
        guard !r.isAtEnd else { return }
        for _ in 0..<(try r.readCount(minimumItemBytes: 2)) {
            let i = try r.readInt()
            guard batches.indices.contains(i) else { throw .invalidValue("IM events of batch \(i)") }
            batches[i].im = try r.readArray()
        }
    }
}
