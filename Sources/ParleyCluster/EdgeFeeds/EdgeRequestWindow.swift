import Synchronization

/// Issue 18: what the edge answered since the last look — requests, messages sent and their latency as
/// counts per latency bucket — for the node's own history of the last minutes (`/status` `activity`, the
/// dashboard's charts). Prometheus keeps the cumulative form (`parley_edge_request_seconds`); this one is
/// taken and reset every sample, so the p99 of one sample's interval needs no subtraction of histograms.
public final class EdgeRequestWindow: Sendable {
    /// Upper bounds of the buckets in milliseconds; a slower answer falls into one more, open-ended bucket.
    public static let boundsMillis: [Double] = [0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 150, 200,
                                                300, 500, 750, 1000, 2000, 5000, 10000]

    public struct Taken: Sendable, Equatable {
        public var requests: UInt64
        public var messages: UInt64
        /// The bound of the bucket holding the 99th percentile answer (nil without requests; the last bound
        /// doubled for the open bucket).
        public var p99Millis: Double?
    }

    private struct Counts {
        var buckets = [UInt64](repeating: 0, count: EdgeRequestWindow.boundsMillis.count + 1)
        var messages: UInt64 = 0
    }

    private let counts = Mutex(Counts())

    public init() {}

    public func record(millis: Double, message: Bool) {
        let bucket = Self.boundsMillis.firstIndex { millis <= $0 } ?? Self.boundsMillis.count
        counts.withLock {
            $0.buckets[bucket] += 1
            if message { $0.messages += 1 }
        }
    }

    /// What was recorded since the last call, and starts over.
    public func take() -> Taken {
        let c = counts.withLock { current in
            defer { current = Counts() }
            return current
        }
        let total = c.buckets.reduce(0, +)
        guard total > 0 else { return Taken(requests: 0, messages: c.messages, p99Millis: nil) }
        // The smallest bucket with at least 99 % of the answers at or below it.
        let rank = (total * 99 + 99) / 100
        var seen: UInt64 = 0
        for (i, n) in c.buckets.enumerated() {
            seen += n
            if seen >= rank {
                return Taken(requests: total, messages: c.messages,
                             p99Millis: i < Self.boundsMillis.count ? Self.boundsMillis[i] : Self.boundsMillis.last! * 2)
            }
        }
        return Taken(requests: total, messages: c.messages, p99Millis: nil)
    }
}
