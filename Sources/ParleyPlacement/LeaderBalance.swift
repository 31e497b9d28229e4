import ParleyRaft

/// Issue 17, leader balance: which leadership transfers bring every node within one of its fair share of
/// shard leaders. Pure, so the rule is tested without a cluster; `RaftDriver.balanceLeaders` runs it on the
/// meta leader and asks the shards' leaders to transfer.
///
/// Elections alone are first-come: on a fresh cluster the node that starts first wins most groups (36 of 64
/// on a 3-node `parley dev`), and a node that restarts leads nothing until another fails. A transfer moves
/// one shard's leadership from the node with the most to a replica on the node with the fewest.
public struct LeaderBalance: Sendable {
    /// One shard as a node that holds a replica sees it.
    public struct Shard: Sendable, Hashable {
        public var shard: ShardID
        public var leader: NodeID
        /// The voters of the group that may take over (caught up; the leader among them).
        public var replicas: [NodeID]
        /// Every member of the group, learners and outgoing voters included (a node is dropped from the
        /// registry only once no group names it).
        public var members: [NodeID]

        public init(shard: ShardID, leader: NodeID, replicas: [NodeID], members: [NodeID]? = nil) {
            self.shard = shard
            self.leader = leader
            self.replicas = replicas
            self.members = members ?? replicas
        }
    }

    public struct Transfer: Sendable, Hashable, CustomStringConvertible {
        public var shard: ShardID
        public var from: NodeID
        public var to: NodeID
        public var description: String { "shard \(shard): \(from) → \(to)" }

        public init(shard: ShardID, from: NodeID, to: NodeID) {
            self.shard = shard
            self.from = from
            self.to = to
        }
    }

    /// Nodes that may lead (up and answering); a shard led elsewhere, or by nobody, is not moved.
    public let nodes: [NodeID]
    public let shards: [Shard]

    public init(nodes: [NodeID], shards: [Shard]) {
        self.nodes = nodes.sorted()
        self.shards = shards.sorted { $0.shard < $1.shard }
    }

    /// Leaders per node (every node in `nodes` present, zero included).
    public var counts: [NodeID: Int] {
        var out = Dictionary(uniqueKeysWithValues: nodes.map { ($0, 0) })
        for s in shards where out[s.leader] != nil { out[s.leader]! += 1 }
        return out
    }

    /// Balanced: no node leads two or more shards than another (so each is within ±1 of shards ÷ nodes).
    public var isBalanced: Bool {
        let c = counts.values
        guard let high = c.max(), let low = c.min() else { return true }
        return high - low <= 1
    }

    /// Up to `limit` transfers that narrow the spread. Each step moves one leader's worth from a node leading
    /// at least two more shards than another: directly when the lighter node holds a replica of one of the
    /// donor's shards, else along a chain (A hands a shard to B, B hands another to C), which leaves the nodes
    /// in between with as many as before. Deterministic: the busiest donor first, the shortest chain, the
    /// idlest receiver and the lowest shard id first. Every step lowers the sum of squared counts, so repeated
    /// rounds end balanced whenever the replicas allow it.
    public func transfers(limit: Int) -> [Transfer] {
        var counts = self.counts
        var leader = Dictionary(uniqueKeysWithValues: shards.map { ($0.shard, $0.leader) })
        var moved: Set<ShardID> = []
        var out: [Transfer] = []
        while out.count < limit, let chain = nextChain(counts: counts, leader: leader, moved: moved),
              out.count + chain.count <= limit {
            for t in chain {
                out.append(t)
                moved.insert(t.shard)
                leader[t.shard] = t.to
            }
            counts[chain.first!.from]! -= 1
            counts[chain.last!.to]! += 1
        }
        return out
    }

    /// The shortest chain of transfers from the busiest possible donor to a node leading two fewer.
    private func nextChain(counts: [NodeID: Int], leader: [ShardID: NodeID], moved: Set<ShardID>) -> [Transfer]? {
        let byLoad = counts.sorted { $0.value != $1.value ? $0.value < $1.value : $0.key < $1.key }.map(\.key)
        for donor in byLoad.reversed() {
            // Breadth first over "u leads an unmoved shard that v holds a replica of".
            var via: [NodeID: Transfer] = [:]
            var frontier = [donor]
            var seen: Set<NodeID> = [donor]
            while !frontier.isEmpty {
                var next: [NodeID] = []
                for u in frontier {
                    for v in byLoad where !seen.contains(v) {
                        guard let s = shards.first(where: { leader[$0.shard] == u && !moved.contains($0.shard)
                                                            && $0.replicas.contains(v) }) else { continue }
                        seen.insert(v)
                        via[v] = Transfer(shard: s.shard, from: u, to: v)
                        if counts[v]! <= counts[donor]! - 2 {
                            var chain: [Transfer] = []
                            var at = v
                            while let t = via[at] {
                                chain.insert(t, at: 0)
                                at = t.from
                                if at == donor { break }
                            }
                            return chain
                        }
                        next.append(v)
                    }
                }
                frontier = next
            }
        }
        return nil
    }
}
