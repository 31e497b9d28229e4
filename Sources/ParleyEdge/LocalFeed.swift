import NIOConcurrencyHelpers
import ParleyCluster
import ParleyHost
import ParleyPlacement

/// Issue 35: the feeds of one Raft loop's shards that this node's own replicas serve, read in one long poll.
/// A shard's `ShardFeed` hands itself over (`adopt`) once a single poll was answered here by a replica that
/// knows the leader, and waits until the batched poll hands it back (the replica no longer can feed it alone:
/// `RaftDriver.LocalFeedAnswer.alone`, or the poll failed). The pages of every shard that applied events in
/// one ready cycle reach the `Edge` in one actor call, and their frames each loop in one hand-over.
final class LocalFeed: Sendable {
    private struct Member {
        var cursor: UInt64
        /// Numbers each adoption, so a page polled for an earlier feed of the shard is not taken for a later one's.
        var token: UInt64
        var handBack: CheckedContinuation<UInt64?, Never>
    }

    private struct State {
        var members: [ShardID: Member] = [:]
        var tokens: UInt64 = 0
        /// The poll loop runs while there are members (it ends when the last one leaves).
        var running = false
    }

    private let state = NIOLockedValueBox(State())
    private let partition: Int
    private let source: any LocalEventFeeds
    private let edge: Edge
    private let settings: EdgeSettings

    init(partition: Int, source: any LocalEventFeeds, edge: Edge, settings: EdgeSettings) {
        self.partition = partition
        self.source = source
        self.edge = edge
        self.settings = settings
    }

    /// Reads the shard from `cursor` in the batched poll until it hands the shard back: returns the cursor the
    /// shard's own poll goes on from, or nil when the calling task was cancelled (its feed stopped).
    func adopt(_ shard: ShardID, cursor: UInt64) async -> UInt64? {
        // This adoption's token, for the cancellation handler: it must not release a later adoption's member.
        let adoption = NIOLockedValueBox<UInt64?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (handBack: CheckedContinuation<UInt64?, Never>) in
                let (adopted, start) = state.withLockedValue { s -> (Bool, Bool) in
                    // Checked under the lock the cancellation handler takes: a feed stopped just now is not kept.
                    guard !Task.isCancelled, s.members[shard] == nil else { return (false, false) }
                    s.tokens += 1
                    s.members[shard] = Member(cursor: cursor, token: s.tokens, handBack: handBack)
                    adoption.withLockedValue { $0 = s.tokens }
                    defer { s.running = true }
                    return (true, !s.running)
                }
                guard adopted else {
                    handBack.resume(returning: Task.isCancelled ? nil : cursor)
                    return
                }
                if start {
                    Task { await self.run() }
                } else {
                    // The parked poll does not have this shard: have it answered so the next one does.
                    source.nudge(partition: partition)
                }
            }
        } onCancel: {
            // The adoption is read under the state lock, where it is made: either it was made before (and
            // is released here) or it sees the task cancelled and is not made.
            let member = state.withLockedValue { s -> Member? in
                guard let token = adoption.withLockedValue({ $0 }), s.members[shard]?.token == token else { return nil }
                return s.members.removeValue(forKey: shard)
            }
            member?.handBack.resume(returning: nil)
        }
    }

    /// Hands the shard back to its own poll (if it is still the same adoption), to go on from its cursor.
    private func handBack(_ shard: ShardID, token: UInt64) {
        let member = state.withLockedValue { s -> Member? in
            guard s.members[shard]?.token == token else { return nil }
            return s.members.removeValue(forKey: shard)
        }
        member?.handBack.resume(returning: member?.cursor)
    }

    private func run() async {
        while true {
            let polled = state.withLockedValue { s -> [ShardID: (cursor: UInt64, token: UInt64)] in
                if s.members.isEmpty { s.running = false }
                return s.members.mapValues { ($0.cursor, $0.token) }
            }
            if polled.isEmpty { return }
            let answers: [ShardID: RaftDriver.LocalFeedAnswer]
            do {
                answers = try await source.events(polled.mapValues(\.cursor), partition: partition,
                                                  waitMillis: settings.pollWaitMillis)
            } catch {
                // The node is stopping, or the loop failed: every shard's own poll finds its way (and retries).
                for (shard, member) in polled { handBack(shard, token: member.token) }
                continue
            }
            var pages: [ShardEventPage] = []
            var alone: [ShardID] = []
            for shard in answers.keys.sorted() {
                switch answers[shard]! {
                case .page(let page): pages.append(page)
                case .alone: alone.append(shard)
                }
            }
            // Only pages of adoptions still current: a shard whose feed stopped meanwhile is not delivered.
            pages = state.withLockedValue { s in pages.filter { s.members[$0.shard]?.token == polled[$0.shard]?.token } }
            if !pages.isEmpty { await edge.deliver(pages) }
            state.withLockedValue { s in
                for page in pages where s.members[page.shard]?.token == polled[page.shard]?.token {
                    s.members[page.shard]?.cursor = page.cursor
                }
            }
            for shard in alone { if let token = polled[shard]?.token { handBack(shard, token: token) } }
        }
    }
}
