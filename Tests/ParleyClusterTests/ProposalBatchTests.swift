import Testing
import ParleyCluster
@testable import ParleyHost
import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyShardState

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

    /// Issue 34, one encoding: a proposal of form 4 carries the request's bytes, and reads them within their own
    /// length — a request without a key ends where its bytes end, not where the next proposal starts.
    @Test func aRequestFormProposalReadsItsRequestWithinItsOwnBytes() throws {
        let plain = ShardRequest.room(shard: 2, actor: session("ann"), command: send("x"))
        let keyed = ShardRequest.room(shard: 2, actor: .appServer, command: send("y"),
                                      requestKey: RequestKey(id: "app/n1", expiresAt: 9_000))
        var batch = ProposalBatch<ShardCommand>()
        batch.append(id: ProposalID(node: 1, boot: 1, sequence: 1), timestamp: 5, request: plain.encoded())
        batch.append(id: ProposalID(node: 1, boot: 1, sequence: 2), timestamp: 6, request: keyed.encoded())
        batch.append(GroupProposal(id: ProposalID(node: 1, boot: 1, sequence: 3), timestamp: 7, actor: .appServer,
                                   command: ShardCommand.room(send("z"))))
        let read = try ProposalBatch<ShardCommand>.proposals(in: batch.bytes)
        #expect(read.map(\.id.sequence) == [1, 2, 3])
        #expect(read.map(\.timestamp) == [5, 6, 7])
        #expect(read[0].actor == plain.actor && read[0].command == plain.command && read[0].requestKey == nil)
        #expect(read[1].actor == .appServer && read[1].command == keyed.command && read[1].requestKey == keyed.requestKey)
        #expect(read[2].command == .room(send("z")) && read[2].requestKey == nil)
        // A request's bytes with more after the request (a stray byte inside its length: read as a key, cut
        // short) are refused, as is a request cut short.
        var padded = ProposalBatch<ShardCommand>()
        padded.append(id: ProposalID(node: 1, boot: 1, sequence: 1), timestamp: 5, request: plain.encoded() + [0])
        #expect(throws: CodecError.self) { try ProposalBatch<ShardCommand>.proposals(in: padded.bytes) }
        var cut = ProposalBatch<ShardCommand>()
        cut.append(id: ProposalID(node: 1, boot: 1, sequence: 1), timestamp: 5, request: Array(plain.encoded().dropLast(2)))
        #expect(throws: CodecError.self) { try ProposalBatch<ShardCommand>.proposals(in: cut.bytes) }
    }

    /// The last entry of shard 0 on `node`.
    private func lastEntry(_ cluster: InProcessCluster, on node: NodeID) throws -> Entry {
        let replica = try #require(cluster.hosts[node]!.replicas[0])
        let last = try replica.log.lastIndex()
        return try #require(try replica.log.entries(from: last, to: last + 1, maxBytes: 1 << 20).first)
    }

    /// Issue 34: a request a peer's call brought (its bytes) enters the log as it came — the entry holds those
    /// bytes — and applies alike on every replica; a leader beside an older node writes form 3 instead, which
    /// that node reads.
    @Test func aLeaderPutsTheRequestIntoTheEntryAsItCameOnlyOnceEveryNodeReadsThatForm() throws {
        for requestForm in [true, false] {
            let cluster = try InProcessCluster(shards: 1)
            cluster.requestForm = requestForm
            try cluster.restartAll()
            try cluster.submit(.createRoom(CreateRoom(roomId: "hall", creator: "ann", name: "Hall")), room: "hall")
            try cluster.submit(.enter(EnterRoom(roomId: "hall", nickname: "Ann")), room: "hall", as: session("ann"))
            let leader = try #require(cluster.leader(of: 0))
            let request = ShardRequest.room(shard: 0, actor: session("ann"), command: send("as it came"))
            let body = request.encoded()
            var answer: Result<ShardOutcome, ClusterError>?
            cluster.hosts[leader]!.propose(request, encoded: body, timestamp: cluster.clock) { answer = $0 }
            try cluster.run(until: { answer != nil }, "the proposal to be answered")
            guard case .success(.room(let outcome))? = answer, case .success(.messageSent) = outcome.result else {
                Issue.record("not sent: \(String(describing: answer))"); continue
            }
            let entry = try lastEntry(cluster, on: leader)
            #expect(entry.data[0] == ProposalBatch<ShardCommand>.version)
            #expect(entry.data[1] == (requestForm ? GroupProposal<ShardCommand>.requestForm : GroupProposal<ShardCommand>.version))
            #expect(requestForm == entry.data.suffix(body.count).elementsEqual(body))
            try cluster.run(until: { cluster.replicasAgree(on: 0) })
            for node in cluster.nodes {
                #expect(try lastEntry(cluster, on: node).data == entry.data)
                let bodies = cluster.events[node, default: []].compactMap { if case .message(let m) = $0.1.kind { m.body } else { nil } }
                #expect(bodies == ["as it came"], "node \(node)")
            }
        }
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
