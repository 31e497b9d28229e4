#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which webhook targets a node calls (`--webhook-allow`, docs/webhooks.md): an app names any URL, and a
/// node that called whatever it was given would let an app server reach the operator's own network (the
/// peer port, a metadata service, an admin page). So a target on a loopback, private, link-local, shared or
/// unspecified address — or named `localhost` — is refused unless the operator allowed it, by exact host
/// name or by an address range; every other target is called. A host name is judged by its name here; the
/// node that calls it judges the addresses the name resolves to, on every call, by the same rule.
public struct WebhookTargetRule: Sendable, Hashable {
    /// What the operator allowed beyond public addresses.
    public enum Allowance: Sendable, Hashable {
        /// Every target (a trusted deployment, the local quick start).
        case any
        /// This host name, exactly (lower-cased).
        case host(String)
        /// This address range.
        case range(AddressRange)
    }

    public var allowances: [Allowance]

    /// Public addresses only.
    public static let publicOnly = WebhookTargetRule(allowances: [])

    public init(allowances: [Allowance]) {
        self.allowances = allowances
    }

    /// Reads `--webhook-allow`: a comma-separated list of `any`, host names, addresses and CIDR ranges.
    public init?(parsing text: String) {
        var out: [Allowance] = []
        for part in text.split(separator: ",").map({ String($0.filter { !$0.isWhitespace }).lowercased() })
        where !part.isEmpty {
            if part == "any" {
                out.append(.any)
            } else if let range = AddressRange(parsing: part) {
                out.append(.range(range))
            } else if part.utf8.count <= 253, part.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }) {
                out.append(.host(part))
            } else {
                return nil
            }
        }
        allowances = out
    }

    /// Why the node does not call `target` (nil: it does).
    public func refusal(_ target: WebhookTarget) -> String? {
        if allowances.contains(.any) || allowances.contains(.host(target.host)) { return nil }
        if let address = IPAddress(parsing: target.host) { return refusal(address, named: target.host) }
        if target.host == "localhost" || target.host.hasSuffix(".localhost") {
            return "\(target.host) is this machine: the operator has not allowed it as a webhook target (--webhook-allow)"
        }
        return nil
    }

    /// Why the node does not call `address` (one a target's name resolved to, or a literal).
    public func refusal(_ address: IPAddress, named name: String? = nil) -> String? {
        if allowances.contains(.any) { return nil }
        guard let kind = address.restrictedKind else { return nil }
        for case .range(let r) in allowances where r.contains(address) { return nil }
        return "\(name ?? "\(address)") is a \(kind) address: the operator has not allowed it as a webhook target (--webhook-allow)"
    }
}

/// An IPv4 or IPv6 address as 16 bytes (IPv4 mapped into `::ffff:0:0/96`).
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public var bytes: [UInt8]
    public var isV4: Bool

    public init?(parsing text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            let b = withUnsafeBytes(of: v4.s_addr) { Array($0) }
            bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + b
            isV4 = true
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        bytes = withUnsafeBytes(of: v6) { Array($0) }
        isV4 = bytes.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF])
    }

    public var description: String {
        isV4 ? bytes.suffix(4).map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                .joined(separator: ":")
    }

    /// What kind of restricted address this is (nil: a public one).
    var restrictedKind: String? {
        for (range, kind) in Self.restricted where range.contains(self) { return kind }
        return nil
    }

    private static let restricted: [(AddressRange, String)] = [
        ("0.0.0.0/8", "unspecified"), ("127.0.0.0/8", "loopback"), ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"), ("192.168.0.0/16", "private"), ("169.254.0.0/16", "link-local"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"), ("224.0.0.0/4", "multicast"), ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"), ("::1/128", "loopback"), ("fc00::/7", "private"), ("fe80::/10", "link-local"),
        ("ff00::/8", "multicast"),
    ].map { (AddressRange(parsing: $0.0)!, $0.1) }
}

/// An address and a prefix length (`10.0.0.0/8`, `fd00::/8`, or one address).
public struct AddressRange: Sendable, Hashable {
    public var base: IPAddress
    /// Over the 16-byte form (an IPv4 range's prefix plus 96).
    public var prefixBits: Int

    public init?(parsing text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let base = IPAddress(parsing: parts[0]) else { return nil }
        let width = base.isV4 ? 32 : 128
        var bits = width
        if parts.count == 2 {
            guard let b = Int(parts[1]), (0...width).contains(b) else { return nil }
            bits = b
        }
        self.base = base
        prefixBits = bits + (base.isV4 ? 96 : 0)
    }

    public func contains(_ address: IPAddress) -> Bool {
        var left = prefixBits
        for i in 0..<16 where left > 0 {
            let take = min(8, left)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if base.bytes[i] & mask != address.bytes[i] & mask { return false }
            left -= take
        }
        return true
    }
}

extension AddressRange: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = AddressRange(parsing: value)! }
}
