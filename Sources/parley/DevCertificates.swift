import Crypto
import Foundation
import SwiftASN1
import X509

/// `parley dev --tls` (SPEC T1): a local CA and one certificate for `localhost` and 127.0.0.1 that every dev
/// node serves on its client port, made once per data folder (`DATA/tls/`) and kept, so a browser or a
/// client told to trust `ca.pem` keeps trusting later runs. P-256 keys, written 0600; the CA's key never
/// leaves the folder.
struct DevCertificates {
    let folder: String
    var caPath: String { folder + "/ca.pem" }
    var certificatePath: String { folder + "/localhost.pem" }
    var keyPath: String { folder + "/localhost.key" }

    /// Makes what is missing (all of it when the CA is new: a certificate of an older CA would not verify).
    func prepare(now: Date = Date()) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let caKeyPath = folder + "/ca.key"
        let fm = FileManager.default
        if fm.fileExists(atPath: caPath), fm.fileExists(atPath: caKeyPath), fm.fileExists(atPath: certificatePath),
           fm.fileExists(atPath: keyPath) {
            return
        }
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("Parley dev CA") }
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions([
                try Certificate.Extension(BasicConstraints.isCertificateAuthority(maxPathLength: 0), critical: true),
                try Certificate.Extension(KeyUsage(keyCertSign: true, cRLSign: true), critical: true),
            ]),
            issuerPrivateKey: .init(caKey))
        let key = P256.Signing.PrivateKey()
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(825 * 86_400),
            issuer: caName, subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions([
                try Certificate.Extension(BasicConstraints.notCertificateAuthority, critical: true),
                try Certificate.Extension(KeyUsage(digitalSignature: true), critical: true),
                try Certificate.Extension(try ExtendedKeyUsage([.serverAuth]), critical: false),
                try Certificate.Extension(SubjectAlternativeNames([
                    .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                    .ipAddress(ASN1OctetString(contentBytes: ArraySlice([UInt8](repeating: 0, count: 15) + [1]))),
                ]), critical: false),
            ]),
            issuerPrivateKey: .init(caKey))
        try write(caKey.pemRepresentation, to: caKeyPath, mode: 0o600)
        try write(key.pemRepresentation, to: keyPath, mode: 0o600)
        try write(try leaf.serializeAsPEM().pemString, to: certificatePath, mode: 0o644)
        try write(try ca.serializeAsPEM().pemString, to: caPath, mode: 0o644)
    }

    private func write(_ text: String, to path: String, mode: Int) throws {
        try? FileManager.default.removeItem(atPath: path)
        guard FileManager.default.createFile(atPath: path, contents: Data((text + "\n").utf8),
                                             attributes: [.posixPermissions: mode]) else {
            throw DevCertificatesError.cannotWrite(path)
        }
    }
}

enum DevCertificatesError: Error, CustomStringConvertible {
    case cannotWrite(String)

    var description: String {
        switch self {
        case .cannotWrite(let path): return "cannot write \(path)"
        }
    }
}
