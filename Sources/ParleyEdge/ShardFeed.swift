import ParleyCluster
import ParleyPlacement

/// One poll loop over a shard's event feed, shared by every local session in the shard's rooms.
final class ShardFeed: Sendable {
    let shard: ShardID
    /// The first poll (cursor nil): resolves to the replica's present index. Enters wait for it.
    let start: Task<UInt64, any Error>
    private let loop: Task<Void, Never>

    init(shard: ShardID, edge: Edge, cluster: any EdgeCluster, settings: EdgeSettings) {
        self.shard = shard
        let start = Task<UInt64, any Error> {
            try await cluster.events(shard: shard, after: nil, waitMillis: 0).cursor
        }
        self.start = start
        loop = Task {
            guard var cursor = try? await start.value else { return }
            while !Task.isCancelled {
                let page: ShardEventPage
                do {
                    page = try await cluster.events(shard: shard, after: cursor, waitMillis: settings.pollWaitMillis)
                } catch {
                    try? await Task.sleep(for: .milliseconds(settings.pollRetryMillis))
                    continue
                }
                if Task.isCancelled { return }
                await edge.deliver(page)
                cursor = page.cursor
            }
        }
    }

    func stop() {
        start.cancel()
        loop.cancel()
    }
}
