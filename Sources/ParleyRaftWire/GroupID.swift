/// Identifies a Raft group on a node: 0 is the meta group, shard `s` is group `s + 1`.
public typealias GroupID = UInt64
