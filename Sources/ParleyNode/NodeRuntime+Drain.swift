import ParleyCluster
import ParleyEdge

/// Issue 18: while the registry marks this node draining (`parley cluster drain`), its edge hands its
/// clients to other edges, a bounded number per second (`Edge.handOffRound`); the Raft driver hands its
/// leaderships over (`RaftDriver.handOffLeaderships`). Undrained, it stops handing clients over.
extension NodeRuntime {
    func followDrain() async {
        var draining = false
        var reported = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            guard let state = try? await driver.metaState().get(), let me = state.nodes[config.id] else { continue }
            let now = me.state == .draining
            if now != draining {
                draining = now
                logger.notice(now ? "draining: handing shard leaderships and clients to the other nodes"
                                  : "no longer draining")
            }
            guard now, let edge = self.edge.withLockedValue({ $0 }) else { continue }
            let open = await edge.handOffRound()
            if ContinuousClock.now - reported >= .seconds(10) {
                reported = .now
                let led = (try? await driver.status().get())?.filter { $0.role == .leader }.count ?? 0
                logger.info("draining", metadata: ["connectionsLeft": "\(open)", "shardsLed": "\(led)"])
            }
        }
    }
}
