import ParleyRaft
import ParleyRooms
import ParleyWire

/// Issue 34: the reads of one replica waiting for Raft's read index (`RawNode.readIndex`), then for this
/// replica to apply that far. A read is answered from the state as applied then — linearizable: the index
/// is the leader's commit index at a moment a quorum confirmed it still led (`ReadOnlyOption.safe`), so the
/// state answered from holds every write acknowledged before the read was asked — and writes nothing to
/// the log. A value type the replica owns, with its ticks passed in; what waits (`Waiter`: a read to answer,
/// or a caller that only waits for this replica to catch up) is the replica's.
struct PendingReads<Waiter> {
    struct Read {
        var waiter: Waiter
        /// The read index, once Raft gave it.
        var index: LogIndex?
        var askedAt: UInt64
    }

    /// Requests contexts are unique in the group: a leader drops a context it already has pending, and every
    /// replica's reads reach it. So a context is the asking node and its own count.
    private let node: NodeID
    private var next: UInt64 = 0
    private var waiting: [UInt64: Read] = [:]

    init(node: NodeID) {
        self.node = node
    }

    var isEmpty: Bool { waiting.isEmpty }

    /// Records a read; returns the context to ask Raft's read index with.
    mutating func add(_ read: Read) -> [UInt8] {
        next += 1
        waiting[next] = read
        var w = ByteWriter()
        w.write(node)
        w.write(next)
        return w.bytes
    }

    /// Raft gave the read index of `context` (a context of another node, or of a read given up, is ignored).
    mutating func indexed(_ context: [UInt8], at index: LogIndex) {
        var r = ByteReader(context)
        guard let from = try? r.readUInt64(), from == node, let id = try? r.readUInt64(), waiting[id] != nil else { return }
        waiting[id]!.index = index
    }

    /// Removes and returns, in the order they were asked, the reads whose index is applied.
    mutating func ready(applied: LogIndex) -> [Read] {
        let ids = waiting.filter { $0.value.index.map { $0 <= applied } ?? false }.keys.sorted()
        return ids.map { waiting.removeValue(forKey: $0)! }
    }

    /// Removes and returns the reads asked before `tick` (nil: all of them): the leader they asked may be gone
    /// (Raft drops a read index request it cannot serve), or this replica may not learn soon that the group
    /// committed as far as the index (a follower behind a leader whose group went quiet). A read is safe to
    /// ask again, at the leader.
    mutating func expired(askedBefore tick: UInt64?) -> [Read] {
        let ids = waiting.filter { _, read in tick.map { read.askedAt < $0 } ?? true }.keys.sorted()
        return ids.map { waiting.removeValue(forKey: $0)! }
    }
}
