import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import ParleyCluster
import ParleyEdge
import ServiceLifecycle
import ParleyPlacement

/// Issue 18: while the registry marks this node draining (`parley cluster drain`) — or removed (issue 17) —
/// its edge hands its clients to other edges, a bounded number per second (`Edge.handOffRound`); the Raft
/// driver hands its leaderships over (`RaftDriver.handOffLeaderships`, or the moves for a removed node).
/// Undrained, it stops handing clients over.
extension NodeRuntime {
    func followDrain() async {
        var draining = false
        var reported = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            guard let state = try? await raft.ownRegistryState().get() else { continue }
            // A removed node's clients go too: its replicas are moving off and it will be stopped.
            let now = state != .active
            if now != draining {
                draining = now
                logger.notice(now ? "\(state): handing clients to the other nodes" : "no longer draining")
            }
            guard now, let edge = self.edge.withLockedValue({ $0 }) else { continue }
            let open = await edge.handOffRound()
            if ContinuousClock.now - reported >= .seconds(10) {
                reported = .now
                let led = (try? await raft.status().get())?.filter { $0.role == .leader }.count ?? 0
                logger.info("draining", metadata: ["connectionsLeft": "\(open)", "shardsLed": "\(led)"])
            }
        }
    }

    /// A file in the data folder saying this node drained itself on a SIGTERM: its next start undrains it.
    var drainedForStopFile: URL { URL(fileURLWithPath: config.dataDirectory).appendingPathComponent("drained-for-stop") }

    /// SIGTERM: drain first, then stop `services`; a second SIGTERM stops at once.
    func stopAfterDraining(_ services: ServiceGroup) -> DispatchSourceSignal {
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        let stopping = NIOLockedValueBox(false)
        source.setEventHandler {
            let again = stopping.withLockedValue { was in defer { was = true }; return was }
            Task {
                if !again { await self.drainBeforeStop() }
                await services.triggerGracefulShutdown()
            }
        }
        source.resume()
        return source
    }

    /// Marks this node draining and waits, at most `drainSeconds`, until its edge holds no client and it
    /// leads no shard — or there is no active node left to take them (the whole cluster is stopping). Does
    /// nothing when the meta group cannot be reached within 3 s, or when this is the last active node.
    func drainBeforeStop() async {
        guard config.drainSeconds > 0 else { return }
        let deadline = ContinuousClock.now + .seconds(config.drainSeconds)
        func othersActive(_ state: MetaState) -> Bool {
            state.nodes.values.contains { $0.state == .active && $0.id != config.id }
        }
        guard let state = try? await raft.metaState().get(), state.nodes[config.id]?.state == .active,
              othersActive(state) else { return }
        let marked = try? await raft.submitMeta(.setNodeState(config.id, .draining), deadline: .now() + .seconds(3)).get()
        guard marked == .done else { return }
        FileManager.default.createFile(atPath: drainedForStopFile.path, contents: Data())
        logger.notice("stopping: draining first", metadata: ["forAtMost": "\(config.drainSeconds) s"])
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(500))
            let open = await edgeConnections()
            let led = (try? await raft.status().get())?.filter { $0.role == .leader }.count ?? 0
            if open == 0 && led == 0 { break }
            // Nowhere to hand anything (the whole cluster is stopping).
            if let state = try? await raft.metaState().get(), !othersActive(state) { break }
        }
        let open = await edgeConnections()
        logger.notice("drained; stopping", metadata: ["connectionsLeft": "\(open)"])
    }

    private func edgeConnections() async -> Int {
        guard let edge = edge.withLockedValue({ $0 }) else { return 0 }
        return await edge.counts.connections
    }

    /// After a stop that drained this node (a SIGTERM), it serves again: the registry marks it active.
    /// `drainedBefore`: the marker was there when this process started (one written since is this
    /// process's own stop, and must not be undone).
    func undrainAfterStop(drainedBefore: Bool) async {
        guard drainedBefore else { return }
        for _ in 0..<50 where !Task.isCancelled {
            if let state = try? await raft.metaState().get(), state.nodes[config.id]?.state != .draining {
                break
            }
            if (try? await raft.submitMeta(.setNodeState(config.id, .active)).get()) == .done {
                logger.notice("active again after the drain that preceded the last stop")
                break
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
        try? FileManager.default.removeItem(at: drainedForStopFile)
    }
}
