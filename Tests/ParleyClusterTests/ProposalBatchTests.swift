import Testing
import ParleyCluster
import ParleyHost
import ParleyRaft
import ParleyRooms
import ParleyWire

/// Commands proposed on a replica during one ready cycle enter the log as one entry (`ProposalBatch`).
@Suite struct ProposalBatchTests {
    private func send(_ body: String) -> RoomCommand { .sendMessage(SendMessage(roomId: "hall", body: body)) }

    /// A one-shard cluster with room "hall" and Ann in it.
    private func hallWithAnn(snapshotEvery: LogIndex = 10_000) throws -> InProcessCluster {
        let cluster = try InProcessCluster(shards: 1)
        cluster.snapshotEvery = snapshotEvery
        try cluster.restartAll()
        try cluster.submit(.createRoom(CreateRoom(roomId: "hall", creator: "ann", name: "Hall")), room: "hall")
        try cluster.submit(.enter(EnterRoom(roomId: "hall", nickname: "Ann")), room: "hall", as: session("ann"))
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        return cluster
    }

    /// The server ids of the messages `node` published, in order.
    private func serverIds(_ cluster: InProcessCluster, on node: NodeID) -> [UInt64] {
        cluster.events[node, default: []].compactMap { if case .message(let m) = $0.1.kind { m.serverId } else { nil } }
    }

    /// Proposes `bodies` on the leader without running a cycle in between, then runs until all are answered.
    private func proposeTogether(_ cluster: InProcessCluster, _ bodies: [String]) throws -> [Result<ApplyOutcome, ClusterError>] {
        let leader = cluster.hosts[cluster.leader(of: 0)!]!
        var answers: [Int: Result<ApplyOutcome, ClusterError>] = [:]
        for (i, body) in bodies.enumerated() {
            leader.propose(send(body), roomID: "hall", actor: session("ann"), timestamp: cluster.clock) { answers[i] = $0 }
        }
        try cluster.run(until: { answers.count == bodies.count }, "every proposal to be answered")
        return (0..<bodies.count).map { answers[$0]! }
    }

    @Test func proposalsOfOneCycleShareOneEntryAndApplyInOrderWithTheirOwnServerIds() throws {
        let cluster = try hallWithAnn()
        let leader = cluster.leader(of: 0)!
        let before = cluster.hosts[leader]!.status()[0].lastIndex
        let idsBefore = serverIds(cluster, on: leader)
        let answers = try proposeTogether(cluster, (0..<20).map { "m\($0)" })
        #expect(cluster.hosts[leader]!.status()[0].lastIndex == before + 1)
        // Each command got its own outcome: consecutive room sequence numbers, in the order proposed.
        let seqs = answers.map { r -> UInt64? in
            if case .success(let o) = r, case .success(.messageSent(let seq, _, _)) = o.result { seq } else { nil }
        }
        #expect(seqs.allSatisfy { $0 != nil })
        let first = seqs[0] ?? 0
        #expect(seqs == (0..<20).map { first + UInt64($0) })
        // Server ids stay unique and increasing across entries: one per command, not one per entry.
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        let ids = serverIds(cluster, on: leader)
        #expect(ids.count == idsBefore.count + 20)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 + 1 == $1 })
        for node in cluster.nodes { #expect(serverIds(cluster, on: node) == ids) }
        let bodies = cluster.events[leader, default: []].compactMap { if case .message(let m) = $0.1.kind { m.body } else { nil } }
        #expect(bodies == (0..<20).map { "m\($0)" })
    }

    @Test func aFullBatchIsProposedAtOnceAndTheRestStartsTheNextEntry() throws {
        let cluster = try hallWithAnn()
        let leader = cluster.leader(of: 0)!
        let before = cluster.hosts[leader]!.status()[0].lastIndex
        let count = ProposalBatch<RoomCommand>.maxCount + 3
        let answers = try proposeTogether(cluster, (0..<count).map { "m\($0)" })
        #expect(cluster.hosts[leader]!.status()[0].lastIndex == before + 2)
        #expect(answers.allSatisfy { if case .success(let o) = $0, case .success = o.result { true } else { false } })
    }

    @Test func commandIndexesContinueAfterEveryReplicaRestartsFromASnapshot() throws {
        let cluster = try hallWithAnn(snapshotEvery: 10)
        for i in 0..<25 { try cluster.submit(send("m\(i)"), room: "hall", as: session("ann")) }
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        let leader = cluster.leader(of: 0)!
        #expect(cluster.hosts[leader]!.status()[0].snapshotIndex >= 20)
        let last = serverIds(cluster, on: leader).last!
        for n in cluster.nodes { cluster.stop(n) }
        cluster.events = [:]
        for n in cluster.nodes { try cluster.start(n) }
        try cluster.submit(send("after"), room: "hall", as: session("ann"))
        try cluster.run(until: { cluster.replicasAgree(on: 0) })
        // Restarted replicas replay the log after their snapshot; the snapshot carries the command count.
        let next = cluster.events.values.flatMap { $0 }.compactMap { e -> UInt64? in
            if case .message(let m) = e.1.kind, m.body == "after" { m.serverId } else { nil }
        }
        #expect(!next.isEmpty && Set(next) == [last + 1])
    }

    @Test func onlyAWholeBatchDecodes() throws {
        let p = GroupProposal(id: ProposalID(node: 1, boot: 1, sequence: 1), timestamp: 5, actor: .appServer,
                              command: send("x"))
        var batch = ProposalBatch<RoomCommand>()
        batch.append(p)
        batch.append(p)
        #expect(try ProposalBatch<RoomCommand>.proposals(in: batch.bytes).count == 2)
        // A lone proposal (version 1), an empty batch and a cut-off one are all refused.
        #expect(throws: CodecError.self) { try ProposalBatch<RoomCommand>.proposals(in: p.encoded()) }
        #expect(throws: CodecError.self) { try ProposalBatch<RoomCommand>.proposals(in: [ProposalBatch<RoomCommand>.version]) }
        #expect(throws: CodecError.self) { try ProposalBatch<RoomCommand>.proposals(in: Array(batch.bytes.dropLast(2))) }
        #expect(throws: CodecError.self) { try ProposalBatch<RoomCommand>.proposals(in: []) }
    }
}
