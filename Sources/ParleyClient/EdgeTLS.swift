import Foundation
import NIOSSL

/// SPEC T1 in the SDK: how the client reaches edges that serve TLS on their client port (`wss://`). With it
/// set, a bare `host:port` address is dialled as `wss://host:port/ws`; an address written `ws://…` or
/// `wss://…` says its own scheme either way.
public struct EdgeTLS: Sendable {
    enum Trust: Sendable { case system, authority(path: String) }

    let trust: Trust

    /// The system's trust store (a certificate from a public CA).
    public static let systemRoots = EdgeTLS(trust: .system)

    /// Only certificates signed by the CA in this PEM file (a private CA, `parley dev --tls`'s own).
    public static func certificateAuthority(pemFile path: String) -> EdgeTLS {
        EdgeTLS(trust: .authority(path: path))
    }

    /// TLS 1.2 or later; the server's name (or IP address) must match its certificate.
    var configuration: TLSConfiguration {
        var c = TLSConfiguration.makeClientConfiguration()
        c.minimumTLSVersion = .tlsv12
        if case .authority(let path) = trust { c.trustRoots = .file(path) }
        return c
    }

    /// The host of a `wss://` URL when it is an IP address: the certificate's name cannot be checked against
    /// it (TLS sends no IP address as the server name), so the SDK refuses it; address edges by DNS name.
    static func ipHost(of url: String) -> String? {
        guard let host = URLComponents(string: url)?.host else { return nil }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr(), v6 = in6_addr()
        let isIP = inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
        return isIP ? bare : nil
    }

    /// The WebSocket URL of an edge address (`host:port`, `ws://host:port` or `wss://host:port`).
    static func url(of address: String, tls: EdgeTLS?) -> (url: String, secure: Bool) {
        for (scheme, secure) in [("wss://", true), ("ws://", false)] where address.hasPrefix(scheme) {
            let rest = address.dropFirst(scheme.count)
            return (scheme + rest + (rest.contains("/") ? "" : "/ws"), secure)
        }
        return tls == nil ? ("ws://\(address)/ws", false) : ("wss://\(address)/ws", true)
    }
}
