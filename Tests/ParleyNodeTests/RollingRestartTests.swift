import Foundation
import Testing
import ParleyClient
import ParleyCluster
import ParleyRooms

/// Issue 18 / SPEC C6: `cluster/rolling-restart.sh` restarts every node of a 3-node and of a 5-node cluster,
/// one at a time
/// (drain, stop, start, ready and caught up, undrain, its share of leaders back), while a client on every edge
/// sends messages. The script stops and starts nodes through wrappers, as it would a service manager. Nothing
/// is lost or duplicated, no client's connection state changes (each moves with its edge's drain), the room
/// sees no one leave or come back, and the cluster ends with every node active and leaders balanced.
@Suite(.serialized, .timeLimit(.minutes(6))) struct RollingRestartTests {
    typealias Faults = ClientFaultTests

    /// The repository's root (the script lives in cluster/).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The longer run of docs/reliability.md is this test with more: `PARLEY_ROLLING_ROUNDS` (every node
    /// restarted that many times, default 1) and `PARLEY_ROLLING_CLIENTS` (clients per edge, default 1).
    static let rounds = Int(ProcessInfo.processInfo.environment["PARLEY_ROLLING_ROUNDS"] ?? "") ?? 1
    static let clientsPerEdge = Int(ProcessInfo.processInfo.environment["PARLEY_ROLLING_CLIENTS"] ?? "") ?? 1

    @Test(arguments: [3, 5]) func C6_aRollingRestartOfEveryNodeUnderLoadLosesNothing(nodes: Int) async throws {
        try await withLocalCluster(size: nodes, extraArguments: ["--leader-balance-ms", "1000"]) { cluster in
        let room = "rolling-room"
        let names = ["vic", "wes", "xia", "yan", "zoe"]
        let users = (0..<Self.clientsPerEdge).flatMap { round in names.prefix(nodes).map { round == 0 ? $0 : "\($0)\(round)" } }
        try await Faults.prepare(cluster, users: users, room: room)
        // One client per edge, with every node in its address list (after a 4100 it may reconnect anywhere).
        let clients = users.indices.map { i in
            let home = UInt64(i % nodes + 1)
            return Faults.client(cluster, via: [home] + cluster.ids.filter { $0 != home })
        }
        let recorders = clients.map { FaultEventRecorder($0) }
        for (client, user) in zip(clients, users) { try await Faults.enter(client, user, room) }
        try await Task.sleep(for: .milliseconds(500))
        let before = await recorders.asyncMap { await $0.events.count }

        // What a service manager would do: stop a node (SIGTERM, until it has exited) and start it again.
        let folder = cluster.directory.appendingPathComponent("rolling")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func pidFile(_ id: UInt64) -> String { folder.appendingPathComponent("node-\(id).pid").path }
        for id in cluster.ids {
            try "\(try #require(cluster.nodes.pid(id)))".write(toFile: pidFile(id), atomically: true, encoding: .utf8)
            let argv = ([cluster.nodes.executable.path] + cluster.nodes.arguments(for: id)).map { "'\($0)'" }.joined(separator: " ")
            let log = cluster.directory.appendingPathComponent("node-\(id).log").path
            try "pid=$(cat '\(pidFile(id))'); kill -TERM $pid; while kill -0 $pid 2>/dev/null; do sleep 0.1; done\n"
                .write(to: folder.appendingPathComponent("stop-\(id).sh"), atomically: true, encoding: .utf8)
            // The node must not keep any descriptor it inherits (the pipe the test reads the script's output
            // from would never reach its end while the node runs).
            try ("for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done\n"
                + "nohup \(argv) >> '\(log)' 2>&1 < /dev/null &\necho $! > '\(pidFile(id))'\n")
                .write(to: folder.appendingPathComponent("start-\(id).sh"), atomically: true, encoding: .utf8)
        }
        defer {
            for id in cluster.ids {
                if let text = try? String(contentsOfFile: pidFile(id), encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                    kill(pid, SIGKILL)
                }
            }
        }

        // Each send is retried (same clientMessageId) until acknowledged; how long that took is kept.
        // Each client's progress, so that the restarts begin once every client's sends go through and the load
        // stops once every client's went through again after them (conditions, not counts in a fixed time).
        let progress = clients.map { _ in SendProgress() }
        let sending = Task { () -> [(seq: Int64, millis: Double)] in
            try await withThrowingTaskGroup(of: [(seq: Int64, millis: Double)].self) { group in
                for ((client, user), progress) in zip(zip(clients, users), progress) {
                    group.addTask {
                        var acked: [(seq: Int64, millis: Double)] = []
                        var i = 0
                        while !Task.isCancelled {
                            i += 1
                            let began = ContinuousClock.now
                            let seq = try await Faults.sendAcked(client, room, body: "\(user)-\(i)", id: "\(user)-\(i)", seconds: 60)
                            let took = ContinuousClock.now - began
                            await progress.record(seq)
                            acked.append((seq, Double(took.components.seconds) * 1000 + Double(took.components.attoseconds) / 1e15))
                            try? await Task.sleep(for: .milliseconds(150))
                        }
                        return acked
                    }
                }
                var all: [(seq: Int64, millis: Double)] = []
                for try await acked in group { all += acked }
                return all
            }
        }
        let ops = cluster.ids.map { "\($0)=\(cluster.ops($0))" }.joined(separator: ",")
        let script = Self.root.appendingPathComponent("cluster/rolling-restart.sh").path
        for (user, p) in zip(users, progress) { try await p.waitFor(count: 3, "\(user)'s sends before the restarts") }
        let started = ContinuousClock.now
        for round in 1...Self.rounds {
            let run = try await cluster.run(["--through", "127.0.0.1:\(cluster.nodes.layout.peerPort(1))",
                                             "--secret-file", cluster.nodes.secretFile, "--ops", ops,
                                             "--stop", "sh \(folder.path)/stop-{id}.sh", "--start", "bash \(folder.path)/start-{id}.sh",
                                             "--parley", cluster.nodes.executable.path, "--timeout", "90"]
                                                + cluster.ids.map { "\($0)" },
                                            executable: URL(fileURLWithPath: "/bin/bash"), prefix: [script], seconds: 320)
            #expect(run.status == 0 && run.output.contains("all \(nodes) nodes restarted"), "round \(round): \(run.output)")
            guard run.status == 0 else { break }
        }
        let took = ContinuousClock.now - started
        for (user, p) in zip(users, progress) {
            let reached = await p.count
            try await p.waitFor(count: reached + 3, "\(user)'s sends after the restarts")
        }
        sending.cancel()
        let sends = try await sending.value
        // A client whose answer was lost sends again with the same clientMessageId: each client's last three
        // acknowledged messages, resent once every node has restarted, get their first seq back and add nothing.
        for ((client, user), p) in zip(zip(clients, users), progress) {
            let seqs = await p.acked
            for k in max(0, seqs.count - 3)..<seqs.count {
                let id = "\(user)-\(k + 1)"
                let again = try await Faults.sendAcked(client, room, body: id, id: id)
                #expect(again == seqs[k], "\(id) resent: seq \(again), first \(seqs[k])")
            }
        }
        let acked = sends.map(\.seq)
        let millis = sends.map(\.millis).sorted()
        func at(_ q: Double) -> Int { millis.isEmpty ? 0 : Int(millis[min(millis.count - 1, Int(Double(millis.count) * q))]) }
        print("rolling restart: \(nodes) nodes × \(Self.rounds) rounds in \(took.components.seconds) s, \(users.count) clients, "
              + "\(acked.count) messages acknowledged; send to ack p50 \(at(0.5)) ms, p99 \(at(0.99)) ms, max \(at(1)) ms")

        try await Faults.waitFor("every acknowledged message to reach every client", seconds: 30) {
            for r in recorders where !Set(await r.messages(in: room).map(\.seq)).isSuperset(of: acked) { return false }
            return true
        }
        for (i, r) in recorders.enumerated() {
            let seqs = await r.messages(in: room).map(\.seq)
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "\(users[i]): in order, once each")
            let states = await r.states(of: room)
            #expect(states == [.entering, .enterOK], "\(users[i])'s connection states: \(states)")
            let churn = await r.events.dropFirst(before[i]).compactMap { event -> String? in
                guard case .notification(_, let n) = event, n.type == .enter || n.type == .exit else { return nil }
                return "\(n.type) \(n.source.userId)"
            }
            #expect(churn.isEmpty, "\(users[i]) saw \(churn)")
        }
        let meta = try await cluster.metaState(via: 1)
        #expect(cluster.ids.allSatisfy { meta.nodes[$0]?.state == .active })
        for client in clients { await client.close() }
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var out: [T] = []
        for element in self { out.append(await transform(element)) }
        return out
    }
}
