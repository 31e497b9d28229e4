import ParleyWire

/// SPEC A1: how many requests one client connection of an app may send, all ops together (a token bucket:
/// `requestsPerSecond`, bursts of `burst`). The edge decides it before any work is done for a request; an
/// app without one of its own gets the node's default (`EdgeSettings.requestBudget`). Kept in the meta
/// group (`MetaCommand.setConnectionBudget`) because the edge checks it before it knows any shard.
public struct ConnectionBudget: Sendable, Hashable {
    public var requestsPerSecond: Int
    public var burst: Int

    public init(requestsPerSecond: Int, burst: Int) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
    }

    /// What a connection of an app without a budget of its own gets (`EdgeSettings.requestBudget`).
    public static let standard = ConnectionBudget(requestsPerSecond: 100, burst: 200)

    /// The highest budget there is: what benchmarks and trusted bots are given (docs/benchmarks.md).
    public static let unlimited = ConnectionBudget(requestsPerSecond: 1_000_000, burst: 1_000_000)

    /// A rate of 1 … 1,000,000 a second and a burst from the rate to 1,000,000 (as `SendBudget`).
    public var isValid: Bool {
        (1...1_000_000).contains(requestsPerSecond) && (requestsPerSecond...1_000_000).contains(burst)
    }
}

extension ConnectionBudget: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(requestsPerSecond)
        w.write(burst)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        requestsPerSecond = try r.readInt()
        burst = try r.readInt()
    }
}
