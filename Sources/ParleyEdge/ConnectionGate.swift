import Synchronization

/// SPEC A2: how many client-port connections a node holds, in all and per remote address, so that a few
/// machines opening sockets cannot use up the node's descriptors and lock every real client out. A
/// connection over either cap is answered 503 (with `Retry-After`) and closed before anything else runs.
public final class ConnectionGate: Sendable {
    private struct Counts {
        var total = 0
        var perAddress: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())
    public let maxTotal: Int
    public let maxPerAddress: Int

    public init(maxTotal: Int, maxPerAddress: Int) {
        self.maxTotal = maxTotal
        self.maxPerAddress = maxPerAddress
    }

    /// Counts a new connection from `address` unless a cap is reached (then nothing is counted).
    public func admit(_ address: String) -> Bool {
        counts.withLock { c in
            guard c.total < maxTotal, c.perAddress[address, default: 0] < maxPerAddress else { return false }
            c.total += 1
            c.perAddress[address, default: 0] += 1
            return true
        }
    }

    /// A connection `admit` counted has closed.
    public func release(_ address: String) {
        counts.withLock { c in
            c.total -= 1
            let left = c.perAddress[address, default: 1] - 1
            c.perAddress[address] = left > 0 ? left : nil
        }
    }

    public var open: Int { counts.withLock { $0.total } }
}
