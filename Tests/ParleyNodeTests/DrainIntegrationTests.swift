import Foundation
import Testing
import ParleyClient
import ParleyCluster
import ParleyRooms

/// Issue 18 / SPEC C5 on real `parley node` processes: draining an edge hands its clients to the other edges.
/// Clients (the Swift SDK over WebSocket) on node 2 send messages all along; `parley cluster drain --node 2`
/// gets each a `reconnect` event with the room's addresses, and each re-enters there taking over its
/// session. Nobody in the room sees them leave or come back (no 302/301), no client sees its connection
/// state change or a gap, every acknowledged message reaches everyone once and in order, and node 2 ends with
/// no client and no shard leader while keeping its replicas. Undrained, it is active again.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DrainIntegrationTests {
    typealias Faults = ClientFaultTests

    @Test func C5_drainingAnEdgeMovesItsClientsWithoutExitsGapsOrDuplicates() async throws {
        try await withLocalCluster { cluster in
        let room = "drain-room"
        let movers = ["mia", "ned", "ora", "pat"]
        try await Faults.prepare(cluster, users: movers + ["lis", "kai"], room: room)
        // The movers start on node 2 (their only address), a listener on node 1 and a sender on node 3: a
        // client on every edge.
        let clients = movers.map { _ in Faults.client(cluster, via: [2]) }
        let recorders = clients.map { FaultEventRecorder($0) }
        for (client, user) in zip(clients, movers) { try await Faults.enter(client, user, room) }
        let listener = Faults.client(cluster, via: [1])
        let heard = FaultEventRecorder(listener)
        try await Faults.enter(listener, "lis", room)
        let stayer = Faults.client(cluster, via: [3])
        let stayed = FaultEventRecorder(stayer)
        try await Faults.enter(stayer, "kai", room)
        try await cluster.eventually("node 2's edge to hold the movers", seconds: 10) {
            (try? await cluster.status(2))?.edge?.connections == movers.count
        }
        let before = await heard.events.count
        try await cluster.eventually("node 2's activity to show the movers (the dashboard's charts)", seconds: 10) {
            (try? await cluster.status(2))?.activity?.last?.connections == movers.count
        }

        // Every mover sends all along; each send is retried (same clientMessageId) until acknowledged.
        let sending = Task { () -> [Int64] in
            try await withThrowingTaskGroup(of: [Int64].self) { group in
                for (client, user) in zip(clients + [stayer], movers + ["kai"]) {
                    group.addTask {
                        var acked: [Int64] = []
                        for i in 0..<60 {
                            acked.append(try await Faults.sendAcked(client, room, body: "\(user)-\(i)", id: "\(user)-\(i)"))
                            try await Task.sleep(for: .milliseconds(100))
                        }
                        return acked
                    }
                }
                var all: [Int64] = []
                for try await acked in group { all += acked }
                return all
            }
        }
        try await Task.sleep(for: .seconds(1))
        let peer1 = "127.0.0.1:\(cluster.nodes.layout.peerPort(1))"
        let drained = try await cluster.parley(["cluster", "drain", "--node", "2", "--through", peer1])
        #expect(drained.status == 0 && drained.output.contains("is draining"), "\(drained.output)")
        try await cluster.eventually("node 2 to hold no client and lead no shard", seconds: 40) {
            guard let s = try? await cluster.status(2) else { return false }
            return s.edge?.connections == 0 && !s.shards.contains { $0.role == "leader" }
        }
        let drainedAt = ContinuousClock.now
        let acked = try await sending.value
        #expect(Set(acked).count == (movers.count + 1) * 60)

        // Node 2 kept its replicas and is listed draining.
        #expect(try await cluster.status(2).shards.count == 16)
        let listing = try await cluster.parley(["cluster", "nodes", "--through", peer1])
        #expect(listing.output.split(separator: "\n").contains { $0.hasPrefix("2 ") && $0.contains("draining") }, "\(listing.output)")
        // Issue 33: the tool with another secret is told so at once, not "connection closed" after 15 s.
        let wrong = cluster.directory.appendingPathComponent("wrong-secret").path
        try "not-the-cluster-secret\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        let started = ContinuousClock.now
        let refused = try await cluster.run(["cluster", "nodes", "--through", peer1, "--secret-file", wrong], seconds: 30)
        #expect(refused.status != 0 && refused.output.contains("credentials refused"), "\(refused.output)")
        #expect(ContinuousClock.now - started < .seconds(10), "took \(ContinuousClock.now - started)")

        try await Faults.waitFor("every acknowledged message to reach everyone", seconds: 30) {
            for r in recorders + [heard, stayed] where !Set(await r.messages(in: room).map(\.seq)).isSuperset(of: acked) { return false }
            return true
        }
        for (name, r) in zip(movers + ["lis", "kai"], recorders + [heard, stayed]) {
            let seqs = await r.messages(in: room).map(\.seq)
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "\(name): in order, once each")
            let events = await r.events
            #expect(!events.contains { if case .gap = $0 { true } else { false } }, "\(name) saw a gap")
            let states = await r.states(of: room)
            #expect(states == [.entering, .enterOK], "\(name)'s connection states: \(states)")
        }
        // The old edge proposes the handed-over sessions' exits after its grace (15 s): they were replaced, so
        // they change nothing — without the take-over each would tell the mover's new session that another
        // device left (multi-login sync), and a client that never moved would leave the room then.
        try await Task.sleep(until: drainedAt + .seconds(17))
        for (name, r) in zip(movers, recorders) {
            let syncs = await r.events.filter { if case .multiLoginSync = $0 { true } else { false } }
            #expect(syncs.isEmpty, "\(name) heard of another device: \(syncs)")
        }
        // The room saw no one leave or come back.
        let churn = await heard.events.dropFirst(before).compactMap { event -> String? in
            guard case .notification(_, let n) = event, n.type == .enter || n.type == .exit,
                  movers.contains(n.source.userId) else { return nil }
            return "\(n.type) \(n.source.userId)"
        }
        #expect(churn.isEmpty, "the room saw \(churn)")
        if HeadlessChromium.executable != nil { try await dashboardShowsTheDrain(cluster, movers: movers.count) }

        let undrained = try await cluster.parley(["cluster", "undrain", "--node", "2", "--through", peer1])
        #expect(undrained.status == 0 && undrained.output.contains("active again"), "\(undrained.output)")
        #expect(try await cluster.metaState(via: 1).nodes[2]?.state == .active)
        for client in clients + [listener, stayer] { await client.close() }
        }
    }

    /// Issue 18: `/dashboard` (rendered by headless Chromium) shows what an operator watches during a drain:
    /// node 2 in the Drains table with nothing left, and each node's activity charts — node 2's connections
    /// went from the movers to 0, its messages/s and p99 show the sends it answered before, and the other
    /// edges now hold the movers.
    private func dashboardShowsTheDrain(_ cluster: LocalCluster, movers: Int) async throws {
        let dom = try await HeadlessChromium.renderedDOM(url: cluster.http(1) + "/dashboard", virtualMilliseconds: 3000)
        let drain = HeadlessChromium.matches(#"<tr data-drain="2"[^>]*>(.*?)</tr>"#, in: dom).first?.first ?? ""
        let drainCells = HeadlessChromium.matches(#"<td[^>]*>([^<]*)</td>"#, in: drain).map { $0[0] }
        #expect(drainCells == ["2", "draining", "0", "0", "0", "no"], "the Drains row of node 2: \(drain)")
        func chart(_ node: Int, _ series: String) -> (latest: String, max: Double) {
            let row = HeadlessChromium.matches(#"<tr data-activity="\#(node)">(.*?)</tr>"#, in: dom).first?.first ?? ""
            let cell = HeadlessChromium.matches(#"<td class="chart" data-series="\#(series)"><span>([^<]*)</span>.*?max ([0-9.]+)</title>"#,
                                                in: row).first ?? ["", "-1"]
            return (cell[0], Double(cell[1]) ?? -1)
        }
        let connections = chart(2, "connections")
        #expect(connections.latest == "0" && connections.max >= Double(movers), "node 2's connections chart: \(connections)")
        #expect(chart(2, "messagesPerSecond").max >= 5, "node 2's messages/s chart: \(chart(2, "messagesPerSecond"))")
        #expect(chart(2, "p99Millis").max > 0, "node 2's p99 chart: \(chart(2, "p99Millis"))")
        #expect(chart(2, "leaders").latest == "0")
        let elsewhere = (Int(chart(1, "connections").latest) ?? 0) + (Int(chart(3, "connections").latest) ?? 0)
        #expect(elsewhere >= movers + 2, "nodes 1 and 3 hold the movers and the two other clients: \(elsewhere)")
        #expect(HeadlessChromium.matches(#"\(last ([0-9.]+) min\)"#, in: dom).first.map { Double($0[0])! > 0 } == true)
    }

    /// Issue 18: a SIGTERM drains first (with `--drain-seconds`): the node's clients move as on
    /// `parley cluster drain` — no connection state change, no exit and re-entry in the room — and the node
    /// exits 0. Started again, it marks itself active.
    @Test func C5_aSIGTERMDrainsFirstAndTheNextStartServesAgain() async throws {
        try await withLocalCluster(extraArguments: ["--drain-seconds", "20"]) { cluster in
        let room = "term-room"
        let movers = ["quin", "rae"]
        try await Faults.prepare(cluster, users: movers + ["sol"], room: room)
        let clients = movers.map { _ in Faults.client(cluster, via: [2]) }
        let recorders = clients.map { FaultEventRecorder($0) }
        for (client, user) in zip(clients, movers) { try await Faults.enter(client, user, room) }
        let listener = Faults.client(cluster, via: [1])
        let heard = FaultEventRecorder(listener)
        try await Faults.enter(listener, "sol", room)
        let before = await heard.events.count
        let stopped = ContinuousClock.now
        let status = await withCheckedContinuation { done in
            Thread.detachNewThread { done.resume(returning: cluster.stop(2)) }
        }
        #expect(status == 0, "node 2 exited \(String(describing: status))")
        #expect(ContinuousClock.now - stopped < .seconds(20), "it stopped once drained, not at the deadline")
        #expect(cluster.diagnosis(lines: 40).contains("stopping: draining first"))
        #expect(try await cluster.metaState(via: 1).nodes[2]?.state == .draining)
        for (i, client) in clients.enumerated() {
            let seq = try await Faults.sendAcked(client, room, body: "after-\(i)", id: "after-\(i)")
            #expect(seq > 0)
            let states = await recorders[i].states(of: room)
            #expect(states == [.entering, .enterOK], "\(movers[i]) moved without a reconnect: \(states)")
        }
        let churn = await heard.events.dropFirst(before).compactMap { event -> String? in
            guard case .notification(_, let n) = event, n.type == .enter || n.type == .exit,
                  movers.contains(n.source.userId) else { return nil }
            return "\(n.type) \(n.source.userId)"
        }
        #expect(churn.isEmpty, "the room saw \(churn)")
        try cluster.start(2)
        try await cluster.eventually("node 2 to be active again", seconds: 30) {
            (try? await cluster.metaState(via: 1))?.nodes[2]?.state == .active
        }
        for client in clients + [listener] { await client.close() }
        }
    }

    /// Issue 17 with C5: a node marked removed hands its clients over too (its replicas are moving off and it
    /// will be stopped): its client moves without a connection state change and the room sees no churn.
    @Test func C5_aRemovedNodesClientsMoveLikeADrainedOnes() async throws {
        try await withLocalCluster(size: 4) { cluster in
        let room = "removed-room"
        try await Faults.prepare(cluster, users: ["tia", "uma"], room: room)
        let mover = Faults.client(cluster, via: [4])
        let moved = FaultEventRecorder(mover)
        try await Faults.enter(mover, "tia", room)
        let listener = Faults.client(cluster, via: [1])
        let heard = FaultEventRecorder(listener)
        try await Faults.enter(listener, "uma", room)
        try await Task.sleep(for: .milliseconds(500))
        let before = await heard.events.count
        let peer1 = "127.0.0.1:\(cluster.nodes.layout.peerPort(1))"
        let removed = try await cluster.parley(["cluster", "remove", "--node", "4", "--through", peer1])
        #expect(removed.status == 0, "\(removed.output)")
        try await cluster.eventually("node 4 to hold no client", seconds: 30) {
            (try? await cluster.status(4))?.edge?.connections == 0
        }
        let seq = try await Faults.sendAcked(mover, room, body: "after the move", id: "tia-after")
        try await Faults.waitFor("the listener to hear it") { await heard.messages(in: room).contains { $0.seq == seq } }
        let states = await moved.states(of: room)
        #expect(states == [.entering, .enterOK], "tia's connection states: \(states)")
        let churn = await heard.events.dropFirst(before).compactMap { event -> String? in
            guard case .notification(_, let n) = event, n.type == .enter || n.type == .exit, n.source.userId == "tia" else { return nil }
            return "\(n.type)"
        }
        #expect(churn.isEmpty, "the room saw tia \(churn)")
        await mover.close(); await listener.close()
        }
    }

    /// Draining is refused, changing nothing, for an unknown node and for the last active node.
    @Test func drainingTheLastActiveNodeIsRefused() async throws {
        try await withLocalCluster { cluster in
        try cluster.startAll()
        try await cluster.waitForLeaders()
        let peer1 = "127.0.0.1:\(cluster.nodes.layout.peerPort(1))"
        let unknown = try await cluster.parley(["cluster", "drain", "--node", "9", "--through", peer1])
        #expect(unknown.status != 0 && unknown.output.contains("not in the registry"), "\(unknown.output)")
        for id: UInt64 in [2, 3] {
            let r = try await cluster.parley(["cluster", "drain", "--node", "\(id)", "--through", peer1])
            #expect(r.status == 0, "\(r.output)")
        }
        let last = try await cluster.parley(["cluster", "drain", "--node", "1", "--through", peer1])
        #expect(last.status != 0 && last.output.contains("last active node"), "\(last.output)")
        #expect(try await cluster.metaState(via: 1).nodes[1]?.state == .active)
        }
    }
}
