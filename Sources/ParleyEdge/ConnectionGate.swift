import NIOCore
import Synchronization

/// SPEC A2: how many client-port connections a node holds, in all and per source, so that a few machines
/// opening sockets cannot use up the node's descriptors and lock every real client out. A connection over a
/// cap is answered 503 (with `Retry-After`) and closed before anything else runs.
///
/// Issue 33 (fair caps): a source is an IPv4 address or an IPv6 /64 (one host is handed a whole /64, so
/// counting full IPv6 addresses would give it millions of caps). While the node is at most half full every
/// source may hold up to `maxPerSource`; past half, a source may add a connection only while it holds less
/// than its share of what is left — `maxPerSource × free ÷ (maxTotal ÷ 2)`, never less than `minShare`. A
/// source with fewer than `minShare` connections (an app server's first API call, a returning user) is let
/// in until the node is truly full, and the sources that hold the most stop growing first: eight addresses
/// opening sockets as fast as they can settle near two thirds of the node, not all of it.
public final class ConnectionGate: Sendable {
    private struct Counts {
        var total = 0
        var perSource: [String: Int] = [:]
    }

    public enum Refusal: String, Sendable {
        /// The node holds `maxTotal`.
        case nodeFull
        /// The source holds `maxPerSource`.
        case sourceCap
        /// The node is past half full and the source holds its share of what is left.
        case sourceShare
    }

    private let counts = Mutex(Counts())
    public let maxTotal: Int
    public let maxPerSource: Int
    /// What every source may hold whatever the others do (until the node is full).
    public let minShare: Int

    public init(maxTotal: Int, maxPerSource: Int, minShare: Int = 16) {
        self.maxTotal = maxTotal
        self.maxPerSource = maxPerSource
        self.minShare = min(minShare, maxPerSource)
    }

    /// Counts a new connection from `source` unless a cap says no (then nothing is counted).
    public func admit(_ source: String) -> Refusal? {
        counts.withLock { c in
            let held = c.perSource[source, default: 0]
            guard c.total < maxTotal else { return .nodeFull }
            guard held < maxPerSource else { return .sourceCap }
            guard held < share(total: c.total) else { return .sourceShare }
            c.total += 1
            c.perSource[source] = held + 1
            return nil
        }
    }

    /// What one source may hold while the node holds `total`.
    func share(total: Int) -> Int {
        let half = max(1, maxTotal / 2)
        guard total >= half else { return maxPerSource }
        return max(minShare, maxPerSource * (maxTotal - total) / half)
    }

    /// A connection `admit` counted has closed.
    public func release(_ source: String) {
        counts.withLock { c in
            c.total -= 1
            let left = c.perSource[source, default: 1] - 1
            c.perSource[source] = left > 0 ? left : nil
        }
    }

    public var open: Int { counts.withLock { $0.total } }

    /// The source a connection from `address` counts against: its IPv4 address (also when written as an
    /// IPv4-mapped IPv6 address), or its IPv6 address's first 64 bits.
    public static func source(of address: SocketAddress?) -> String {
        guard let address else { return "?" }
        switch address {
        case .v4:
            return address.ipAddress ?? "?"
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return bytes[12...].map(String.init).joined(separator: ".")
            }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        case .unixDomainSocket:
            return "unix"
        }
    }
}
