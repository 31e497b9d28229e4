/// SPEC D1: what each of a host's groups holds of its Raft log in memory, as last looked at (in the host's
/// `groups` order), and their sum. The host looks again after each cycle only at the groups the cycle ran, and
/// at every group once a tick: summing every group after every cycle cost a node time in proportion to its
/// groups rather than to its work (every idle shard, every cycle).
struct LogMemoryTally {
    private(set) var seen: [Int] = []
    private(set) var total = 0

    mutating func recount(_ groups: [HostedGroup]) {
        seen = groups.map(\.logBytesHeld)
        total = seen.reduce(0, +)
    }

    mutating func relook(_ i: Int, in groups: [HostedGroup]) {
        let held = groups[i].logBytesHeld
        total += held - seen[i]
        seen[i] = held
    }

    /// The group holding the most, as last looked at.
    var largest: Int? { seen.indices.max { seen[$0] < seen[$1] } }
}
