import Foundation

/// A throwaway CA and certificates it signs, made with the `openssl` command line (Debian's openssl), in a
/// temporary folder of their own: for the peer port's mutual TLS and the client port's TLS.
public struct TestCertificateAuthority: Sendable {
    public let folder: URL
    public var caPath: String { folder.appendingPathComponent("ca.pem").path }
    private var caKeyPath: String { folder.appendingPathComponent("ca.key").path }

    public init(label: String = "parley-test") throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                          "-keyout", caKeyPath, "-out", caPath, "-days", "2", "-subj", "/CN=\(label)-ca",
                          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
    }

    /// `name.pem` and `name.key` with subject `CN=name`, signed by this CA — or, with `selfSigned`, by nobody it
    /// trusts. `extensions`: extension lines for it (`subjectAltName=DNS:localhost`, …).
    public func certificate(_ name: String, extensions: [String] = [], selfSigned: Bool = false) throws
        -> (certificate: String, key: String) {
        let key = folder.appendingPathComponent("\(name).key").path
        let cert = folder.appendingPathComponent("\(name).pem").path
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key]
        if selfSigned {
            try Self.openssl(["req", "-x509"] + curve + ["-out", cert, "-days", "2", "-subj", "/CN=\(name)"]
                             + extensions.flatMap { ["-addext", $0] })
            return (cert, key)
        }
        let csr = folder.appendingPathComponent("\(name).csr").path
        try Self.openssl(["req"] + curve + ["-out", csr, "-subj", "/CN=\(name)"])
        var signing = ["x509", "-req", "-in", csr, "-CA", caPath, "-CAkey", caKeyPath, "-CAcreateserial", "-out", cert,
                       "-days", "2"]
        if !extensions.isEmpty {
            let file = folder.appendingPathComponent("\(name).ext")
            try (extensions.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            signing += ["-extfile", file.path]
        }
        try Self.openssl(signing)
        return (cert, key)
    }

    public func remove() { try? FileManager.default.removeItem(at: folder) }

    private static func openssl(_ arguments: [String]) throws {
        let result = try runToolBlocking("/usr/bin/openssl", arguments)
        guard result.status == 0 else { throw TestCertificateError.openssl(result.output) }
    }
}

public enum TestCertificateError: Error {
    case openssl(String)
}
