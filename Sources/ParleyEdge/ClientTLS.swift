import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOSSL

/// SPEC T1: the client port's TLS (HTTPS for the server API, WSS for clients), from a PEM certificate chain
/// and its private key. The files are looked at again for every new connection (two `stat` calls, nothing
/// read unless they changed), so a renewed certificate — certbot, cert-manager, a Kubernetes secret update —
/// is served to the next connection without a restart. A changed pair that does not load (a half-written
/// file, a key that does not match) keeps the old context and is logged once per change; connections that
/// are open keep the certificate they were made with.
public final class ClientTLS: Sendable {
    public let certificatePath: String
    public let privateKeyPath: String

    private struct Loaded {
        var stamp: FileStamp
        var context: NIOSSLContext
        /// A change that did not load, so it is logged once and not re-read for every connection.
        var refused: FileStamp?
    }

    private let loaded: NIOLockedValueBox<Loaded>
    private let logger: Logger

    /// Loads the pair now: a node given files it cannot use stops at start, not at its first connection.
    public init(certificatePath: String, privateKeyPath: String, logger: Logger = Logger(label: "parley.tls")) throws {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
        self.logger = logger
        let stamp = FileStamp(certificatePath, privateKeyPath)
        loaded = NIOLockedValueBox(Loaded(stamp: stamp, context: try Self.context(certificatePath, privateKeyPath)))
    }

    /// The context for a connection accepted now (reloaded first if the files changed).
    public func context() -> NIOSSLContext {
        let now = FileStamp(certificatePath, privateKeyPath)
        return loaded.withLockedValue { state in
            guard now != state.stamp, now != state.refused else { return state.context }
            do {
                state.context = try Self.context(certificatePath, privateKeyPath)
                state.stamp = now
                state.refused = nil
                logger.info("client-port certificate reloaded", metadata: ["cert": "\(certificatePath)"])
            } catch {
                state.refused = now
                logger.warning("client-port certificate changed but does not load; still serving the previous one",
                               metadata: ["cert": "\(certificatePath)", "error": "\(error)"])
            }
            return state.context
        }
    }

    /// TLS 1.2 and 1.3 only; ALPN offers HTTP/1.1 (the client port's only protocol).
    static func context(_ certificatePath: String, _ privateKeyPath: String) throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
        guard !chain.isEmpty else { throw ClientTLSError.noCertificate(certificatePath) }
        let key = try NIOSSLPrivateKey(file: privateKeyPath, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        return try NIOSSLContext(configuration: configuration)
    }
}

public enum ClientTLSError: Error, CustomStringConvertible {
    case noCertificate(String)

    public var description: String {
        switch self {
        case .noCertificate(let path): return "\(path) holds no PEM certificate"
        }
    }
}

/// What says a file changed without reading it: inode, size and modification time of both files (a
/// renewal by rename changes the inode; one written in place, the time and usually the size).
struct FileStamp: Equatable, Sendable {
    private var parts: [Int64] = []

    init(_ paths: String...) {
        for path in paths {
            var info = stat()
            if stat(path, &info) == 0 {
                parts += [Int64(info.st_ino), Int64(info.st_size), Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec)]
            } else {
                parts += [-1, -1, -1, -1]
            }
        }
    }
}
