import NIOCore
import ParleyTransport
import Synchronization

/// Whether every node of the cluster reads what a feature writes, as this driver last heard (issue 18): a
/// feature that writes something older nodes cannot read waits for it. Asked each second until every node
/// does (a cluster starting, an upgrade finishing), then every 5 s. Asked and set on the driver's loop; read
/// from any thread (a client loop's road straight to a leader reads `shardRequests`).
final class PeerFeatureWatch: Sendable {
    let feature: PeerProtocol.Feature
    fileprivate let heard = Atomic(false)
    fileprivate let asked = Mutex<NIODeadline?>(nil)

    var everyNode: Bool { heard.load(ordering: .relaxed) }

    init(_ feature: PeerProtocol.Feature) {
        self.feature = feature
    }
}

extension RaftDriver {
    /// Asks again whether every node has `watch`'s feature when it is time to; the answer lands on this loop.
    func refresh(_ watch: PeerFeatureWatch, now: NIODeadline) {
        let due = watch.asked.withLock { asked in
            if let last = asked, now - last < (watch.everyNode ? .seconds(5) : .seconds(1)) { return false }
            asked = now
            return true
        }
        guard due else { return }
        everyNode(has: watch.feature) { watch.heard.store($0, ordering: .relaxed) }
    }

    /// Whether every node of the registry (but the dropped) and every peer this node links to speaks a peer
    /// protocol with `feature`; `answer` runs on the driver's loop (not at all when the registry cannot be
    /// read). The links count too: a founding cluster's registry can be empty or partial for a moment, and an
    /// empty list would say yes for nodes nobody asked (a mixed-version run caught an older node handed a
    /// command it could not read that way).
    func everyNode(has feature: PeerProtocol.Feature, _ answer: @escaping (Bool) -> Void) {
        let transport = self.transport, loop = self.loop
        metaState().flatMap { state -> EventLoopFuture<Bool> in
            guard let state, !state.nodes.isEmpty else { return loop.makeSucceededFuture(false) }
            let members = state.nodes.values.filter { $0.state != .dropped }.map(\.id)
            return loop.makeFutureWithTask {
                let linked = await transport.linkStatus().map(\.peer)
                return await transport.everyPeerHas(feature, among: Set(members).union(linked))
            }
        }.whenSuccess { every in
            loop.execute { answer(every) }
        }
    }
}
