import NIOCore
import NIOSSL

/// Optional TLS on the node-to-node port (issue 4: "cleartext h2 with prior knowledge; TLS optional").
/// Mutual: every node presents its certificate and accepts a peer only with a certificate signed by the
/// cluster's CA; HTTP/2 is agreed with ALPN `h2`. Host names are not checked (nodes are addressed by IP and
/// move; the CA is the cluster's own) — the cluster secret still authenticates every request on top.
public struct PeerTLS: Sendable, Hashable {
    /// PEM file with this node's certificate (and any intermediates after it).
    public var certificatePath: String
    /// PEM file with this node's private key.
    public var privateKeyPath: String
    /// PEM file with the CA certificate(s) peers' certificates must chain to.
    public var trustRootsPath: String

    public init(certificatePath: String, privateKeyPath: String, trustRootsPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
        self.trustRootsPath = trustRootsPath
    }

    /// The server and client contexts; throws when a file is missing or unreadable, so a node with bad TLS
    /// settings refuses to start instead of running in the clear.
    func contexts() throws -> (server: NIOSSLContext, client: NIOSSLContext) {
        let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
        guard !chain.isEmpty else { throw PeerTLSError.noCertificate(certificatePath) }
        let key = NIOSSLPrivateKeySource.privateKey(try NIOSSLPrivateKey(file: privateKeyPath, format: .pem))
        let roots = NIOSSLTrustRoots.certificates(try NIOSSLCertificate.fromPEMFile(trustRootsPath))

        var server = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: key)
        server.trustRoots = roots
        server.certificateVerification = .noHostnameVerification  // and a client certificate is required
        server.applicationProtocols = ["h2"]
        server.minimumTLSVersion = .tlsv12

        var client = TLSConfiguration.makeClientConfiguration()
        client.certificateChain = chain
        client.privateKey = key
        client.trustRoots = roots
        client.certificateVerification = .noHostnameVerification
        client.applicationProtocols = ["h2"]
        client.minimumTLSVersion = .tlsv12
        return (try NIOSSLContext(configuration: server), try NIOSSLContext(configuration: client))
    }
}

public enum PeerTLSError: Error, Equatable {
    case noCertificate(String)
}
