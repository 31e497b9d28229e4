import ParleyCluster
import ParleyPlacement
import ParleyRaft
import ParleyRooms
import Testing

/// Issue 35: with `RaftConfig.deferCommitNotice` a shard leader's new commit index rides on the group's next
/// append, or goes with a cycle once it waited (`sendCommitNotices`) — never an append of its own at once.
@Suite struct CommitNoticeHostTests {
    private func deliver(_ cluster: InProcessCluster, to nodes: [NodeID]) throws {
        let sent = cluster.inflight
        cluster.inflight = []
        for (to, envelopes) in sent { cluster.hosts[to]?.receive(envelopes) }
        for n in nodes { try cluster.hosts[n]!.processReady() }
    }

    /// Three nodes whose every host knows the leader of room "a"'s shard, the meta group's first entries out of
    /// the way (heartbeats told every commit so far).
    private func settled(deferCommitNotice: Bool) throws
        -> (cluster: InProcessCluster, shard: ShardID, leader: NodeID, followers: [NodeID]) {
        let cluster = try InProcessCluster(deferCommitNotice: deferCommitNotice)
        try cluster.run(until: cluster.allShardsHaveLeaders)
        let shard = cluster.shardMap.shard(ofRoom: "a")
        let leader = cluster.leader(of: shard)!
        try cluster.run(until: { cluster.hosts.values.allSatisfy { $0.status()[shard].leader == leader } })
        try cluster.run(cycles: 100)
        return (cluster, shard, leader, cluster.nodes.filter { $0 != leader })
    }

    /// One command through the leader's cycle, the followers' and the leader's again: committed, answered.
    private func commitOne(_ cluster: InProcessCluster, leader: NodeID, followers: [NodeID], _ command: RoomCommand) throws {
        var answered = false
        cluster.hosts[leader]!.propose(command, roomID: "a", actor: .appServer, timestamp: cluster.clock) { _ in answered = true }
        try cluster.hosts[leader]!.processReady()
        try deliver(cluster, to: followers)
        try deliver(cluster, to: [leader])
        #expect(answered)
    }

    @Test("issue 35: a deferred commit index waits for the driver's notice or rides on the group's next append")
    func commitIndexWaitsForTheNoticeOrTheNextAppend() throws {
        let (cluster, shard, leader, followers) = try settled(deferCommitNotice: true)
        let host = cluster.hosts[leader]!
        #expect(host.oldestCommitNotice == nil)

        try commitOne(cluster, leader: leader, followers: followers,
                      .createRoom(CreateRoom(roomId: "a", creator: "ann", name: "A")))
        let first = host.status()[shard].commit
        #expect(cluster.inflight.isEmpty)  // no append of its own for the commit
        #expect(host.oldestCommitNotice != nil)
        for f in followers { #expect(cluster.hosts[f]!.status()[shard].applied < first) }

        // The next command's append carries the first commit: its followers apply it with no notice.
        try commitOne(cluster, leader: leader, followers: followers,
                      .updateRoom(UpdateRoom(roomId: "a", name: "A2")))
        for f in followers { #expect(cluster.hosts[f]!.status()[shard].applied >= first) }
        let second = host.status()[shard].commit
        #expect(second > first)
        #expect(host.oldestCommitNotice != nil)

        // The driver's notice (here at once) tells them the second.
        host.sendCommitNotices(waitedAtLeast: .zero)
        try host.processReady()
        #expect(host.oldestCommitNotice == nil)
        try deliver(cluster, to: followers)
        for f in followers { #expect(cluster.hosts[f]!.status()[shard].applied == second) }
    }

    @Test("issue 35: a follower writes an append's new entries before it applies the committed ones it held")
    func aFollowerWritesBeforeItApplies() throws {
        let (cluster, shard, leader, followers) = try settled(deferCommitNotice: true)
        try commitOne(cluster, leader: leader, followers: followers,
                      .createRoom(CreateRoom(roomId: "a", creator: "ann", name: "A")))
        let first = cluster.hosts[leader]!.status()[shard].commit
        let follower = followers[0], host = cluster.hosts[follower]!, database = cluster.databases[follower]!
        #expect(host.status()[shard].applied < first)
        // The next command's append brings a new entry and the first one's commit, which this follower already
        // holds on disk: it writes the new entry (and acknowledges it) before it applies the first.
        cluster.hosts[leader]!.propose(.updateRoom(UpdateRoom(roomId: "a", name: "A2")), roomID: "a", actor: .appServer,
                                       timestamp: cluster.clock) { _ in }
        try cluster.hosts[leader]!.processReady()
        var appliedBeforeTheWrite: LogIndex?
        host.answered = { appliedBeforeTheWrite = host.status()[shard].applied }  // runs just before the write
        let before = database.transactionsWritten
        try deliver(cluster, to: [follower])
        #expect(database.transactionsWritten == before + 1)
        #expect(appliedBeforeTheWrite.map { $0 < first } == true, "applied \(String(describing: appliedBeforeTheWrite)) before the write")
        #expect(host.status()[shard].applied >= first)
        #expect(cluster.inflight.contains { $0.to == leader })  // its acknowledgement
        host.answered = {}
    }

    @Test("issue 35: a notice not yet due stays; without deferral a commit goes to the followers at once")
    func noticesWaitTheirTimeAndImmediateModeSendsAtOnce() throws {
        for deferred in [true, false] {
            let (cluster, _, leader, followers) = try settled(deferCommitNotice: deferred)
            try commitOne(cluster, leader: leader, followers: followers,
                          .createRoom(CreateRoom(roomId: "a", creator: "ann", name: "A")))
            let host = cluster.hosts[leader]!
            if deferred {
                host.sendCommitNotices(waitedAtLeast: .seconds(60))
                try host.processReady()
                #expect(cluster.inflight.isEmpty)
                #expect(host.oldestCommitNotice != nil)
            } else {
                #expect(Set(cluster.inflight.map(\.to)) == Set(followers))
                #expect(host.oldestCommitNotice == nil)
            }
        }
    }
}
