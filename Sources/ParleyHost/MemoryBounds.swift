/// SPEC D1: what a node keeps in memory, bounded by bytes (docs/operations.md, "Memory"). Beyond each bound
/// the data is on disk and still served: Raft entries are read back from the log's rows for a follower that
/// needs them, events past a feed are read by the edges from the rooms' history, and history past a window from
/// the store.
public struct MemoryBounds: Sendable, Hashable {
    /// Raft log entries held in memory by all of a host's groups together (`--raft-log-memory`, for the whole
    /// node; each Raft loop's host takes its share). Past it, the group holding the most drops the data of its
    /// applied entries but the newest few from memory.
    public var raftLogBytes = 16 << 20
    /// Recent events each shard replica keeps for the edges' feeds (`--feed-bytes`).
    public var feedBytesPerShard = 512 << 10
    /// The rooms' recent-history windows of one shard, all together (`--history-window-bytes`; 0: only each
    /// room's count and retention). Replicated: every node should have the same.
    public var historyWindowBytes = 512 << 10
    /// The IM logs' items (users' conversation logs, teams' logs) one shard keeps in memory, all together
    /// (`--im-log-window-bytes`; 0: only each log's count and retention). Replicated: every node should have
    /// the same. What leaves memory is in the history database; a sync past a log's window is read from there.
    public var imLogWindowBytes = 512 << 10
    /// The page cache of each of the node's two SQLite databases (`--sqlite-cache-bytes`). 8 MiB measured as
    /// fast as 32 under the 64-writer load (docs/benchmarks.md, "Memory bounded by bytes").
    public var sqliteCacheBytes = 8 << 20

    public init() {}
}
