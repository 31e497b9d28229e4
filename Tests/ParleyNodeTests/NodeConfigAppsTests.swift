import Foundation
import Testing
import ParleyCluster
import ParleyNode

/// `--app KEY:SECRET`, `PARLEY_APPS` and the config file's `apps` all parse the same way.
@Suite struct NodeConfigAppsTests {
    @Test func appsParseFromRepeatedFlagsAndCommaLists() throws {
        let apps = try NodeConfig.parseApps(["dev:0123456789abcdef", "a:secret-secret-16, b:another-secret-16b"])
        #expect(apps == ["dev": "0123456789abcdef", "a": "secret-secret-16", "b": "another-secret-16b"])
        #expect(try NodeConfig.parseApps([]) == [:])
    }

    @Test func malformedAppsAreRefused() {
        for bad in ["nocolon", ":0123456789abcdef", "k:short", "k:" + String(repeating: "s", count: 129),
                    String(repeating: "k", count: 65) + ":0123456789abcdef"] {
            #expect(throws: NodeConfigError.self) { try NodeConfig.parseApps([bad]) }
        }
    }
}

/// `--peer-tls-cert`, `--peer-tls-key`, `--peer-tls-ca`: all three or none, and readable.
@Suite struct NodeConfigPeerTLSTests {
    @Test func peerTLSNeedsAllThreeReadableFiles() throws {
        #expect(try NodeConfig.parsePeerTLS(cert: nil, key: nil, ca: nil) == nil)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString).pem").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let tls = try NodeConfig.parsePeerTLS(cert: file, key: file, ca: file)
        #expect(tls?.certificatePath == file && tls?.privateKeyPath == file && tls?.trustRootsPath == file)
        #expect(throws: NodeConfigError.self) { try NodeConfig.parsePeerTLS(cert: file, key: nil, ca: file) }
        #expect(throws: NodeConfigError.self) { try NodeConfig.parsePeerTLS(cert: nil, key: nil, ca: file) }
        #expect(throws: NodeConfigError.self) { try NodeConfig.parsePeerTLS(cert: file, key: file, ca: "/nonexistent.pem") }
    }
}
