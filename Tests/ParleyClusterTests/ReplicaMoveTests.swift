import Foundation
import Testing
import ParleyCluster
import ParleyHost
import ParleyRaft
import ParleyRooms
import ParleyPlacement

/// Issue 17, replica moves, on real `RaftHost`s with SQLite (`InProcessCluster`): a node joins, the placement
/// table names it for the shards whose rendezvous top 3 it enters, and the shards' leaders move replicas to
/// it step by step (learner, snapshot, joint promote-and-remove, leadership handed over first when the
/// leader is the one leaving). Nothing is lost, every replica agrees, and only the shards that had to move did.
@Suite(.serialized) struct ReplicaMoveTests {
    /// Every node asks its led shards for one step toward `table`, every `every` cycles.
    private func run(_ check: Check, _ cluster: InProcessCluster, toward table: [[NodeID]], until done: () -> Bool,
                     limit: Int = 6_000, every: Int = 5, crash: ((Int) throws -> Void)? = nil) throws -> [(ShardID, ReplicaMoves.Step)] {
        var taken: [(ShardID, ReplicaMoves.Step)] = []
        for cycle in 0..<limit {
            if done() { return taken }
            if cycle % every == 0 {
                for host in cluster.hosts.values { taken += host.moveReplicas(toward: table, maxLearners: 2) }
            }
            try crash?(cycle)
            try cluster.step()
            // A move never leaves a group with fewer voters than it had (3), in either half of a joint state.
            for host in cluster.hosts.values {
                for m in host.ledMemberships() {
                    check.that(m.conf.voters.count >= 3, "shard \(m.shard): voters \(m.conf.voters)")
                    check.that(!m.conf.isJoint || m.conf.votersOutgoing.count >= 3)
                }
            }
        }
        if !done() { check.fail("placement not reached after \(limit) cycles") }
        return taken
    }

    /// Each shard's leader has applied exactly the table's voters, no learner, no joint state, and exactly
    /// the table's nodes hold a replica.
    private func placed(_ cluster: InProcessCluster, _ table: [[NodeID]]) -> Bool {
        (0..<cluster.shardMap.shardCount).allSatisfy { shard in
            let holders = Set(cluster.hosts.filter { $0.value.shards.contains(shard) }.keys)
            guard let leader = cluster.leader(of: shard), let host = cluster.hosts[leader],
                  let m = host.ledMemberships().first(where: { $0.shard == shard }) else { return false }
            return Set(m.conf.voters) == Set(table[shard]) && m.conf.learners.isEmpty && !m.conf.isJoint
                && holders == Set(table[shard]) && cluster.replicasAgree(on: shard)
        }
    }

    private func seedRooms(_ cluster: InProcessCluster) throws -> [String: [String]] {
        try cluster.run(until: { cluster.allShardsHaveLeaders() }, "leaders")
        var sent: [String: [String]] = [:]
        for r in 0..<16 {
            let room = "move-\(r)"
            try cluster.submit(.createRoom(CreateRoom(roomId: room, creator: "ann", name: room)), room: room)
            try cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room, as: session("ann"))
            for i in 0..<5 {
                let body = "\(room)-\(i)"
                let out = try cluster.submit(.sendMessage(SendMessage(roomId: room, body: body)), room: room, as: session("ann"))
                if case .success(.messageSent) = out.result { sent[room, default: []].append(body) }
            }
        }
        return sent
    }

    private func bodies(_ cluster: InProcessCluster, room: String, on node: NodeID) -> [String]? {
        let shard = cluster.shardMap.shard(ofRoom: room)
        guard let host = cluster.hosts[node], host.shards.contains(shard) else { return nil }
        var answer: Result<ApplyOutcome, ClusterError>?
        host.propose(.historySince(roomId: room, afterSeq: 0, limit: 100), shard: shard, actor: .appServer,
                     timestamp: cluster.clock) { answer = $0 }
        try? cluster.run(until: { answer != nil }, "history")
        guard case .success(let outcome)? = answer, case .success(.history(let items)) = outcome.result else { return nil }
        return items.compactMap { if case .message(let m) = $0 { m.body } else { nil } }
    }

    @Test func aJoiningNodeTakesTheReplicasItWinsAndOnlyThoseMove() async throws {
        try await offThePool { check in
        let cluster = try InProcessCluster(nodes: [1, 2, 3], shards: 8)
        let sent = try seedRooms(cluster)
        try cluster.join(4)
        let before = ReplicaMoves.table(shardMap: cluster.shardMap, nodes: [1, 2, 3])
        let table = ReplicaMoves.table(shardMap: cluster.shardMap, nodes: [1, 2, 3, 4])
        let moving = Set((0..<8).filter { before[$0] != table[$0] })
        check.that(!moving.isEmpty && moving.count < 8, "the test needs some shards to move and some to stay")
        let taken = try run(check, cluster, toward: table, until: { placed(cluster, table) })
        check.that(placed(cluster, table))
        check.that(Set(taken.map(\.0)) == moving, "only the shards whose top 3 changed took steps")
        check.that(cluster.hosts[4]!.shards == moving.sorted())
        // Each moved shard went learner → promote-and-remove (with a transfer first where the leader left).
        for shard in moving {
            let steps = taken.filter { $0.0 == shard }.map(\.1)
            check.that(steps.first == .addLearner(4), "shard \(shard): \(steps)")
            check.that(steps.contains { if case .promote(4, removing: .some) = $0 { true } else { false } }, "shard \(shard): \(steps)")
        }
        // The moved data is there, on the new node too.
        for (room, bodies) in sent {
            for node in table[cluster.shardMap.shard(ofRoom: room)] {
                check.that(self.bodies(cluster, room: room, on: node) == bodies, "\(room) on node \(node)")
            }
        }
        // Still serving: a new message in every room.
        for room in sent.keys {
            let out = try cluster.submit(.sendMessage(SendMessage(roomId: room, body: "after")), room: room, as: session("ann"))
            check.that(out.errorCode == nil)
        }
        }
    }

    /// The same move with crashes: every 7 cycles one node (round robin, the new one included) loses its
    /// process and comes back from its disk, so crashes land on every kind of step (learner added, snapshot
    /// in flight, joint state, transfer). Each move resumes from the applied configuration and the table.
    @Test func movesResumeAfterCrashesAtAnyStep() async throws {
        try await offThePool { check in
        let cluster = try InProcessCluster(nodes: [1, 2, 3], shards: 8)
        let sent = try seedRooms(cluster)
        try cluster.join(4)
        let table = ReplicaMoves.table(shardMap: cluster.shardMap, nodes: [1, 2, 3, 4])
        var victim = 0
        let taken = try run(check, cluster, toward: table, until: { placed(cluster, table) }, limit: 20_000) { cycle in
            guard cycle % 7 == 6, victim < 60 else { return }
            let node = cluster.nodes[victim % cluster.nodes.count]
            victim += 1
            cluster.stop(node)
            try cluster.start(node)
        }
        check.that(placed(cluster, table))
        check.that(victim >= 8, "only \(victim) crashes happened while the moves ran")
        check.that(taken.count > 0)
        for (room, bodies) in sent {
            for node in table[cluster.shardMap.shard(ofRoom: room)] {
                check.that(self.bodies(cluster, room: room, on: node) == bodies, "\(room) on node \(node)")
            }
        }
        }
    }

    /// Back from 4 nodes to 3 (node 4 leaves the table): its replicas move back and it ends holding none.
    @Test func aNodeLeavingTheTableGivesEveryReplicaBack() async throws {
        try await offThePool { check in
        let cluster = try InProcessCluster(nodes: [1, 2, 3], shards: 8)
        let sent = try seedRooms(cluster)
        try cluster.join(4)
        let four = ReplicaMoves.table(shardMap: cluster.shardMap, nodes: [1, 2, 3, 4])
        _ = try run(check, cluster, toward: four, until: { placed(cluster, four) })
        let three = ReplicaMoves.table(shardMap: cluster.shardMap, nodes: [1, 2, 3])
        _ = try run(check, cluster, toward: three, until: { placed(cluster, three) })
        check.that(placed(cluster, three))
        check.that(cluster.hosts[4]!.shards.isEmpty)
        for (room, bodies) in sent {
            for node in three[cluster.shardMap.shard(ofRoom: room)] {
                check.that(self.bodies(cluster, room: room, on: node) == bodies, "\(room) on node \(node)")
            }
        }
        }
    }
}

/// The leader's next step, rule by rule.
@Suite struct ReplicaMoveStepTests {
    private func membership(voters: [NodeID], learners: [NodeID] = [], outgoing: [NodeID] = [], autoLeave: Bool = false,
                            match: [NodeID: LogIndex] = [:], commit: LogIndex = 10, pending: Bool = false,
                            transferring: Bool = false) -> RaftHost.Membership {
        var all = match
        for n in voters + learners where all[n] == nil { all[n] = commit }
        return RaftHost.Membership(shard: 0, conf: ConfState(voters: voters, votersOutgoing: outgoing, learners: learners,
                                                             autoLeave: autoLeave),
                                   commit: commit, match: all, changePending: pending, transferring: transferring)
    }

    @Test func nothingMovesWithoutATableOrWhenPlaced() {
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3]), target: []) == .none)
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3]), target: [3, 1, 2]) == .none)
    }

    @Test func oneChangeAtATime() {
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3], pending: true), target: [1, 2, 4])
                == .wait("a configuration change is applying"))
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3], transferring: true), target: [1, 2, 4])
                == .wait("leadership transfer under way"))
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 4], outgoing: [1, 2, 3]), target: [1, 2, 4])
                == .leaveJoint)
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 4], outgoing: [1, 2, 3], autoLeave: true),
                                  target: [1, 2, 4]) == .wait("leaving the joint configuration"))
    }

    @Test func aNewReplicaIsALearnerFirstThenPromotedInPlaceOfTheOldOne() {
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3]), target: [1, 2, 4]) == .addLearner(4))
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3]), target: [1, 2, 4], mayAddLearner: false)
                == .wait("move budget: replica 4 waits"))
        // Still catching up (its match is behind the commit index): wait.
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3], learners: [4], match: [4: 3]),
                                  target: [1, 2, 4]) == .wait("a learner is catching up"))
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3], learners: [4]), target: [1, 2, 4])
                == .promote(4, removing: 3))
        let change = ReplicaMoves.Step.promote(4, removing: 3).change
        #expect(change == ConfChange(transition: .auto, changes: [ConfChangeSingle(type: .addVoter, node: 4),
                                                                   ConfChangeSingle(type: .removeNode, node: 3)]))
    }

    @Test func aLeaderThatMustGoHandsOverFirst() {
        #expect(ReplicaMoves.next(leader: 3, membership: membership(voters: [1, 2, 3], learners: [4]), target: [1, 2, 4])
                == .transferLeadership(to: 1))
        // Voters beyond the table: a follower is removed; the leader itself only after handing over.
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3, 4]), target: [1, 2, 3]) == .remove(4))
        #expect(ReplicaMoves.next(leader: 4, membership: membership(voters: [1, 2, 3, 4]), target: [1, 2, 3])
                == .transferLeadership(to: 1))
    }

    @Test func aLearnerTheTableNoLongerWantsIsRemoved() {
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3], learners: [5]), target: [1, 2, 4])
                == .remove(5))
    }

    @Test func votersAreNeverRemovedBelowTheTablesCount() {
        // The table names 3 nodes but only 2 of the voters are among them: add the third before anyone leaves.
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2, 3]), target: [1, 2, 5]) == .addLearner(5))
        #expect(ReplicaMoves.next(leader: 1, membership: membership(voters: [1, 2]), target: [1, 2, 3]) == .addLearner(3))
    }
}

/// What the move counters count (`parley_moves_started/done/failed_total`), from each applied change.
@Suite struct ReplicaMoveTransitionTests {
    @Test func aLearnerAddedStartsAMoveAndItsPromotionFinishesIt() {
        let added = ReplicaMoves.Transition(from: ConfState(voters: [1, 2, 3]), to: ConfState(voters: [1, 2, 3], learners: [4]))
        #expect(added.started == [4] && added.done.isEmpty && added.failed.isEmpty)
        // Promote 4 and remove 3 in one joint change: the move is done, nothing failed.
        let joint = ReplicaMoves.Transition(from: ConfState(voters: [1, 2, 3], learners: [4]),
                                            to: ConfState(voters: [1, 2, 4], votersOutgoing: [1, 2, 3], autoLeave: true))
        #expect(joint.done == [4] && joint.started.isEmpty && joint.failed.isEmpty)
        let left = ReplicaMoves.Transition(from: ConfState(voters: [1, 2, 4], votersOutgoing: [1, 2, 3]),
                                           to: ConfState(voters: [1, 2, 4]))
        #expect(left == ReplicaMoves.Transition(from: ConfState(), to: ConfState()), "leaving the joint state moves nothing")
    }

    @Test func aLearnerRemovedBeforeItVotedIsAFailedMove() {
        let t = ReplicaMoves.Transition(from: ConfState(voters: [1, 2, 3], learners: [5]), to: ConfState(voters: [1, 2, 3]))
        #expect(t.failed == [5] && t.started.isEmpty && t.done.isEmpty)
    }

    @Test func aVoterDemotedOnLeavingAJointStateStartsNoMove() {
        let t = ReplicaMoves.Transition(from: ConfState(voters: [1, 2, 4], votersOutgoing: [1, 2, 3]),
                                        to: ConfState(voters: [1, 2, 4], learners: [3]))
        #expect(t.started.isEmpty && t.done.isEmpty && t.failed.isEmpty)
    }

    @Test func stepsReadAsOperatorsSeeThem() {
        #expect("\(ReplicaMoves.Step.promote(4, removing: 3))" == "promote node 4, remove node 3 (joint change)")
        #expect("\(ReplicaMoves.Step.wait("a learner is catching up"))" == "waiting: a learner is catching up")
        #expect("\(ReplicaMoves.Step.addLearner(5))" == "add node 5 as a learner")
    }
}

/// The real-process scale-out sequence, in process: 3 founders, a 4th and a 5th node join, then node 1 leaves.
@Suite(.serialized) struct ReplicaMoveSequenceTests {
    @Test func twoJoinsThenTheFirstNodeLeaves() async throws {
        try await offThePool { check in
        let cluster = try InProcessCluster(nodes: [1, 2, 3], shards: 16)
        try cluster.run(until: { cluster.allShardsHaveLeaders() }, "leaders")
        for r in 0..<16 {
            try cluster.submit(.createRoom(CreateRoom(roomId: "seq-\(r)", creator: "ann", name: "r")), room: "seq-\(r)")
        }
        func settle(_ nodes: [NodeID]) throws {
            let table = ReplicaMoves.table(shardMap: cluster.shardMap, nodes: nodes)
            for cycle in 0..<20_000 {
                let done = (0..<16).allSatisfy { shard in
                    Set(cluster.hosts.filter { $0.value.shards.contains(shard) }.keys) == Set(table[shard])
                        && cluster.leader(of: shard) != nil
                }
                if done { return }
                if cycle % 5 == 0 { for host in cluster.hosts.values { host.moveReplicas(toward: table, maxLearners: 2) } }
                try cluster.step()
            }
            let stuck = (0..<16).filter { shard in Set(cluster.hosts.filter { $0.value.shards.contains(shard) }.keys) != Set(table[shard]) }
            check.fail("not placed on \(nodes): shards \(stuck) held by \(stuck.map { s in cluster.hosts.filter { $0.value.shards.contains(s) }.keys.sorted() })")
        }
        try cluster.join(4)
        try settle([1, 2, 3, 4])
        try cluster.join(5)
        try settle([1, 2, 3, 4, 5])
        try settle([2, 3, 4, 5])
        }
    }
}

/// Failures of a test body that runs on a thread of its own (`offThePool`), recorded by the test afterwards.
final class Check: @unchecked Sendable {
    private(set) var failures: [String] = []

    func that(_ condition: Bool, _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line) {
        if !condition { failures.append("\(file):\(line): \(message())") }
    }

    func fail(_ message: String, file: StaticString = #file, line: UInt = #line) { failures.append("\(file):\(line): \(message)") }
}

/// Runs an in-process cluster on a thread of its own: thousands of synchronous cycles on one of the test
/// runner's two shared threads starved the suites that serve sockets (their clients timed out connecting).
func offThePool(_ body: @escaping @Sendable (Check) throws -> Void) async throws {
    let check = Check()
    try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, Error>) in
        Thread { done.resume(with: Result { try body(check) }) }.start()
    }
    for failure in check.failures { Issue.record(Comment(rawValue: failure)) }
}
