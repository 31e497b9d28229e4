import Foundation
import ParleyAPI
import Synchronization

/// Issue 18: the node's recent activity, sampled every `NodeStatusReport.activityIntervalSeconds` and kept
/// for `activitySamples` samples (10 minutes at 2 s), so an operator opening `/dashboard` during a drain or a rolling
/// restart sees the last minutes at once rather than from the moment the page opened.
final class NodeActivity: Sendable {
    private let samples = Mutex<[NodeStatusReport.Activity]>([])
    private let capacity: Int

    init(capacity: Int = NodeStatusReport.activitySamples) { self.capacity = capacity }

    func record(_ sample: NodeStatusReport.Activity) {
        samples.withLock {
            $0.append(sample)
            if $0.count > capacity { $0.removeFirst($0.count - capacity) }
        }
    }

    var all: [NodeStatusReport.Activity] { samples.withLock { $0 } }
}

extension NodeRuntime {
    /// Samples connections, sessions, leaderships and what the edge answered, until cancelled.
    func sampleActivity() async {
        var last = ContinuousClock.now
        _ = metrics.edge.window.take()  // what came before the first interval is not part of it
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(NodeStatusReport.activityIntervalSeconds))
            let now = ContinuousClock.now
            let elapsed = now - last
            last = now
            let seconds = max(0.001, elapsed / .seconds(1))
            let taken = metrics.edge.window.take()
            let figures = await edge.withLockedValue({ $0 })?.figures
            let leaders = (try? await raft.status().get())?.filter { $0.role == .leader }.count ?? 0
            activity.record(.init(time: Int64(Date().timeIntervalSince1970 * 1000),
                                  connections: figures?.connections ?? 0, sessions: figures?.sessions ?? 0,
                                  leaders: leaders, messagesPerSecond: Self.hundredths(Double(taken.messages) / seconds),
                                  requestsPerSecond: Self.hundredths(Double(taken.requests) / seconds),
                                  p99Millis: taken.p99Millis))
        }
    }

    private static func hundredths(_ x: Double) -> Double { (x * 100).rounded() / 100 }
}
