import ParleyCluster
import ParleyHost
import ParleyPlacement

/// One poll loop over a shard's event feed, shared by every local session in the shard's rooms.
final class ShardFeed: Sendable {
    let shard: ShardID
    /// The first poll (cursor nil): resolves to the replica's present index. Enters wait for it.
    let start: Task<UInt64, any Error>
    private let loop: Task<Void, Never>

    /// `local`: the batched poll of the shard's Raft loop on this node, which reads the shard while this
    /// node's replica can feed it (issue 35).
    init(shard: ShardID, edge: Edge, cluster: any EdgeCluster, settings: EdgeSettings, local: LocalFeed? = nil) {
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
                if let local, cluster.localFeeds?.feedsHere(shard) == true {
                    guard let back = await local.adopt(shard, cursor: cursor) else { return }
                    cursor = back
                }
            }
        }
    }

    func stop() {
        start.cancel()
        loop.cancel()
    }
}
