import Testing
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import ParleyAPI
import ParleyNode
import ParleyPlacement
import ParleyTestSupport

/// How `/status/cluster` finds a node's HTTP port from what the node registered.
@Suite struct ClusterStatusReportTests {
    @Test func aNodeListeningOnEveryInterfaceIsReachedAtItsPeerHost() {
        #expect(ClusterStatusReport.reachableAddress(http: "0.0.0.0:8101", peer: "parley-2:7101") == "parley-2:8101")
        #expect(ClusterStatusReport.reachableAddress(http: "[::]:8101", peer: "10.0.0.7:7101") == "10.0.0.7:8101")
        #expect(ClusterStatusReport.reachableAddress(http: "10.0.0.5:8101", peer: "10.0.0.6:7101") == "10.0.0.5:8101")
        #expect(ClusterStatusReport.reachableAddress(http: "127.0.0.1:18501", peer: "127.0.0.1:17601") == "127.0.0.1:18501")
    }

    /// Issue 18: `/readyz` waits for a restarted node to catch up, not only for leaders (a rolling restart
    /// and a Kubernetes readiness probe send it traffic only then).
    @Test func aNodeFarBehindItsCommitIsNotReady() {
        func report(commit: UInt64, applied: UInt64, leader: UInt64 = 1) -> NodeStatusReport {
            let shard = NodeStatusReport.Shard(shard: 0, role: "follower", term: 2, leader: leader, commit: commit,
                                               applied: applied, logSize: 0, lastSnapshot: 0, rooms: 0, quiesced: false,
                                               digest: nil)
            let meta = NodeStatusReport.Meta(leader: 1, placementVersion: 1,
                                             nodes: [.init(id: 4, peerAddress: "a:1", httpAddress: "a:2", state: "active")], apps: 0)
            return NodeStatusReport(node: 4, version: "t", uptimeSeconds: 1, httpAddress: "a:2", peerAddress: "a:1",
                                    shardCount: 1, healthy: true, peers: [], shards: [shard], meta: meta)
        }
        #expect(report(commit: 5000, applied: 5000).ready)
        #expect(report(commit: 5000, applied: 5000 - NodeStatusReport.readyLag).ready, "a busy shard is a few behind")
        #expect(report(commit: 5000, applied: 10).notReadyBecause == "1 of 1 shards are catching up (applied more than 1000 entries behind commit)")
        #expect(report(commit: 5000, applied: 5000, leader: 0).notReadyBecause == "1 of 1 shards have no leader")
    }

    @Test func withoutAMetaViewOnlyTheLocalNodeIsListed() async {
        let local = NodeStatusReport(node: 4, version: "t", uptimeSeconds: 1, httpAddress: "127.0.0.1:1", peerAddress: "127.0.0.1:2",
                                     shardCount: 1, healthy: true, peers: [], shards: [], meta: nil)
        let report = await ClusterStatusReport.gather(local: local) { _, _ in throw URLError(.badURL) }
        #expect(report == ClusterStatusReport(gatheredBy: 4, nodes: [.init(id: 4, httpAddress: "127.0.0.1:1", state: nil,
                                                                           status: local, error: nil)]))
    }
}

/// SPEC A4 on real nodes: with `--ops-listen` the client port serves no operator page, the operator port
/// serves them all, and `/status/cluster` gathers every node's status over the peer port (no node's
/// operator address is in the registry).
@Suite(.serialized, .timeLimit(.minutes(5))) struct OperatorListenerTests {
    static func get(_ url: String) async -> (Int, Data) {
        var request = URLRequest(url: URL(string: url)!)
        request.timeoutInterval = 5
        guard let (data, response) = try? await ToolHTTP.shared.data(for: request) else { return (0, Data()) }
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    @Test func A4_operatorPagesLiveOnTheirOwnListenerOnly() async throws {
        try await withLocalCluster(opsListeners: true) { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            for id in cluster.ids {
                for path in ["/status", "/status/cluster", "/metrics", "/dashboard", "/placement/shards/0"] {
                    #expect(await Self.get(cluster.http(id) + path).0 == 404, "client port of node \(id) serves \(path)")
                    #expect(await Self.get(cluster.ops(id) + path).0 == 200, "ops port of node \(id) lacks \(path)")
                }
                for path in ["/healthz", "/readyz"] {
                    #expect(await Self.get(cluster.http(id) + path).0 == 200)
                    #expect(await Self.get(cluster.ops(id) + path).0 == 200)
                }
            }
            let (_, body) = await Self.get(cluster.ops(2) + "/status/cluster")
            let report = try JSONDecoder().decode(ClusterStatusReport.self, from: body)
            #expect(report.nodes.map(\.id) == cluster.ids)
            #expect(report.nodes.allSatisfy { $0.status != nil && $0.error == nil }, "\(report.nodes.map(\.error))")
            // Each node says which malloc it runs with: by default the C library's, as the tests set no LD_PRELOAD
            // (docs/operations.md, "Memory allocator").
            let allocators = report.nodes.map { $0.status?.allocator ?? "none" }
            #expect(allocators.allSatisfy { $0.hasPrefix("glibc 2") }, "\(allocators)")
        }
    }

    /// `--allocator jemalloc`: each node preloads jemalloc for itself (one exec, same process id) when the machine
    /// has it, and says so; an unknown allocator is refused before the node starts.
    @Test(.enabled(if: MemoryAllocator.jemallocLibrary != nil && ProcessInfo.processInfo.environment["LD_PRELOAD"] == nil,
                   "no libjemalloc2 here (cluster/test-tools.sh installs it), or the tests run with an LD_PRELOAD"))
    func aNodeToldToUseJemallocRunsWithIt() async throws {
        try await withLocalCluster(extraArguments: ["--allocator", "jemalloc"]) { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            for id in cluster.ids {
                let (_, body) = await Self.get(cluster.http(id) + "/status")
                let report = try JSONDecoder().decode(NodeStatusReport.self, from: body)
                #expect(report.allocator?.hasPrefix("jemalloc 5") == true, "node \(id): \(report.allocator ?? "none")")
            }
        }
        let (status, said) = try await runTool(try LocalNodeProcesses.parleyExecutable().path,
                                               ["node", "--id", "1", "--listen", "127.0.0.1:1", "--allocator", "tcmalloc"])
        #expect(status != 0)
        #expect(said.contains("--allocator tcmalloc: expected jemalloc or system"), "\(said)")
    }

    @Test("Issue 33: /status/cluster asks the cluster at most once a second, however many callers poll it")
    func gatheringIsSharedAndKeptForASecond() async throws {
        let cache = ClusterStatusCache(maxAge: .seconds(1))
        let report = ClusterStatusReport(gatheredBy: 1, nodes: [])
        // 50 callers at once: one gathering (a slow one), all get its report.
        let answers = try await withThrowingTaskGroup(of: ClusterStatusReport.self) { group in
            for _ in 0..<50 {
                group.addTask { try await cache.report { try await Task.sleep(for: .milliseconds(200)); return report } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 50 && answers.allSatisfy { $0 == report })
        #expect(await cache.gatherings == 1)
        _ = try await cache.report { report }
        #expect(await cache.gatherings == 1, "within the second: the kept report")
        try await Task.sleep(for: .milliseconds(1_100))
        _ = try await cache.report { report }
        #expect(await cache.gatherings == 2, "after it: asked again")
    }
}

/// SPEC A4, for the operator in an incident: a node's `/status` answers at once even while the meta group's
/// replicas cannot be reached. A node without a meta replica fetches the meta state from one; with them paused
/// (SIGSTOP: connections open and silent) that fetch waited for its call timeout, 10 s per node asked, and
/// `/status` with it. It now shows the copy fetched last after half a second. Real `parley node` processes.
@Suite(.serialized, .timeLimit(.minutes(3))) struct StatusWithoutMetaTests {
    @Test("a node without a meta replica answers /status within a second while every meta replica is paused")
    func statusAnswersWhileTheMetaReplicasArePaused() async throws {
        try await withLocalCluster(size: 5) { cluster in
            try cluster.startAll()
            try await cluster.waitForLeaders()
            let holders = Set(ShardMap(shardCount: 16).metaReplicas(nodes: cluster.ids))
            let outside = try #require(cluster.ids.first { !holders.contains($0) })
            // Its first status fetches the state (the copy it keeps).
            try await cluster.eventually("node \(outside) to show the meta state") {
                (try? await cluster.status(outside))?.meta != nil
            }
            for id in holders { cluster.pause(id) }
            defer { for id in holders { cluster.nodes.pause(id, false) } }
            // Long enough for the links to the paused nodes to be found silent and closed (4 s).
            try await Task.sleep(for: .seconds(6))
            for _ in 0..<2 {
                let began = ContinuousClock.now
                let report = try await cluster.status(outside)  // its request times out after 2 s
                let took = ContinuousClock.now - began
                #expect(took < .seconds(1.5), "node \(outside)'s /status took \(took) with the meta replicas paused")
                #expect(report.meta?.nodes.count == 5, "the copy fetched last: \(String(describing: report.meta))")
            }
        }
    }
}
