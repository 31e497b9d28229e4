import Foundation
import ParleyTestSupport
import ParleyClient
import ParleyNode
import ParleyRooms
import Testing

/// A throwaway CA and certificates for `localhost`, for the client port.
struct ClientPortCertificates {
    let authority: TestCertificateAuthority
    var folder: URL { authority.folder }
    var caPath: String { authority.caPath }

    init() throws {
        authority = try TestCertificateAuthority(label: "parley-client-tls")
    }

    /// A certificate for `localhost` whose subject is `CN=name`, signed by this CA.
    func leaf(_ name: String) throws -> (certificate: String, key: String) {
        try authority.certificate(name, extensions: ["subjectAltName=DNS:localhost", "basicConstraints=CA:FALSE",
                                                     "extendedKeyUsage=serverAuth"])
    }

    /// The subject of the certificate a TLS server on `port` presents to a new connection.
    static func servedSubject(port: Int) async throws -> String {
        let shell = "openssl s_client -connect 127.0.0.1:\(port) -servername localhost </dev/null 2>/dev/null"
            + " | openssl x509 -noout -subject"
        return try await runTool("/bin/sh", ["-c", shell]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func remove() { authority.remove() }
}

/// SPEC T1 on real node processes: the client port serves HTTPS and WSS from PEM files, picks up a renewed
/// certificate without a restart, and a client speaking plain HTTP to it fails at once instead of hanging.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ClientTLSIntegrationTests {
    @Test("T1: SDK clients over wss on two nodes, the server API over HTTPS, plain HTTP refused, a renewed certificate served")
    func clientPortServesTLS() async throws {
        let certs = try ClientPortCertificates()
        defer { certs.remove() }
        let first = try certs.leaf("edge-one")
        // The nodes read these paths; a renewal writes new files over them.
        let served = (certificate: certs.folder.appendingPathComponent("served.pem").path,
                      key: certs.folder.appendingPathComponent("served.key").path)
        try FileManager.default.copyItem(atPath: first.certificate, toPath: served.certificate)
        try FileManager.default.copyItem(atPath: first.key, toPath: served.key)
        try await withLocalCluster(opsListeners: true, clientCertificate: served) { cluster in
            let app = "tls-app", room = "tls-room"
            try await ClientEndToEndTests.setUp(cluster, app: app, room: room, accounts: ["ann", "ben"])
            let address = { (id: UInt64) in cluster.http(id).replacingOccurrences(of: "https://", with: "") }
            #expect(address(1).hasPrefix("localhost:"))
            let port = { (id: UInt64) in Int(address(id).split(separator: ":").last!)! }

            // The SDK over wss, trusting the test CA: two clients on two nodes exchange messages.
            func client(_ id: UInt64, tls: EdgeTLS? = .certificateAuthority(pemFile: certs.caPath),
                        host: String? = nil) -> ChatroomClient {
                var configuration = ChatroomClient.Configuration.addresses([host.map { "\($0):\(port(id))" } ?? address(id)])
                configuration.tls = tls
                configuration.connectTimeout = .seconds(5)
                return ChatroomClient(configuration: configuration)
            }
            let ann = client(1), ben = client(2)
            let benInbox = ClientEndToEndTests.Inbox(ben)
            try await ann.enterChatroom(ChatroomEnterRequest(
                roomId: room, auth: .independent(appKey: app, account: "ann", token: "tok-ann"), nickname: "Ann"))
            try await ben.enterChatroom(ChatroomEnterRequest(
                roomId: room, auth: .independent(appKey: app, account: "ben", token: "tok-ben"), nickname: "Ben"))
            for i in 0..<3 { try await ann.sendMessage(room, body: "over-tls-\(i)") }
            try await cluster.eventually("ben to get ann's messages over wss") {
                await benInbox.messages(room).map(\.body) == (0..<3).map { "over-tls-\($0)" }
            }

            // A client that does not trust the CA, or speaks plain ws:// to the TLS port, fails to enter with
            // "connection lost" (the WebSocket library notices the node's close of a plain upgrade only at the
            // connect timeout, 5 s here); the SDK refuses wss to an IP address.
            for (what, stranger) in [("no trust in the CA", client(1, tls: .systemRoots)),
                                     ("plain ws://", client(1, tls: nil)),
                                     ("wss to 127.0.0.1", client(1, host: "127.0.0.1"))] {
                let started = ContinuousClock.now
                do {
                    try await stranger.enterChatroom(ChatroomEnterRequest(
                        roomId: room, auth: .independent(appKey: app, account: "ben", token: "tok-ben"), nickname: "B2"))
                    Issue.record("\(what): entered")
                } catch let error as ChatroomError {
                    #expect(error.code == ChatroomError.connectionLost, "\(what): \(error)")
                }
                #expect(ContinuousClock.now - started < .seconds(8), "\(what) took \(ContinuousClock.now - started)")
            }
            // Plain HTTP to the TLS port: the node closes it at once (curl: empty reply or reset), no answer.
            let plainStarted = ContinuousClock.now
            let plain = try await runTool("/usr/bin/curl", ["-sS", "--max-time", "5", "http://127.0.0.1:\(port(1))/healthz"])
            #expect(plain.status != 0 && plain.status != 28 && !plain.output.contains("ok"), "plain HTTP to the TLS port: \(plain)")
            #expect(ContinuousClock.now - plainStarted < .seconds(2), "plain HTTP closed after \(ContinuousClock.now - plainStarted)")
            // TLS 1.2 is offered; the server API answers over HTTPS.
            let tls12 = try await runTool("/usr/bin/curl", ["-sS", "--max-time", "5", "--tlsv1.2", "--tls-max", "1.2",
                                                       "--cacert", certs.caPath, cluster.http(1) + "/healthz"])
            #expect(tls12.status == 0, "TLS 1.2: \(tls12.output)")
            let api = SignedAPIClient(appKey: app, secret: String(repeating: "k", count: 32))
            let got = try await api.postOverTLS(cluster.http(2), "/v1/room/get", ["roomId": room], caFile: certs.caPath)
            #expect(got.status == 200 && ((got.data["room"] as? [String: Any])?["roomId"] as? String) == room, "\(got.json)")
            #expect(try await cluster.status(1).clientEncrypted == true)

            // Renewal: new files over the served paths (by rename, as cert-manager and certbot do) are presented
            // to the next connection; files that do not load keep the previous certificate.
            #expect(try await ClientPortCertificates.servedSubject(port: port(1)).contains("edge-one"))
            let second = try certs.leaf("edge-two")
            for (from, to) in [(second.key, served.key), (second.certificate, served.certificate)] {
                let staged = to + ".new"
                try FileManager.default.copyItem(atPath: from, toPath: staged)
                _ = rename(staged, to)
            }
            #expect(try await ClientPortCertificates.servedSubject(port: port(1)).contains("edge-two"))
            #expect(try await ClientPortCertificates.servedSubject(port: port(3)).contains("edge-two"))
            try "not a certificate\n".write(toFile: served.certificate, atomically: true, encoding: .utf8)
            #expect(try await ClientPortCertificates.servedSubject(port: port(1)).contains("edge-two"))
            let carl = client(3)
            try await carl.enterChatroom(ChatroomEnterRequest(
                roomId: room, auth: .independent(appKey: app, account: "ben", token: "tok-ben"), nickname: "Ben3"))
            // The Python client written from docs/protocol.md, over wss (Python's ssl trusts SSL_CERT_FILE).
            if EdgeInteropIntegrationTests.python != nil {
                let ws = { (id: UInt64) in "wss://\(address(id))/ws" }
                let result = try await EdgeInteropIntegrationTests.runPython(
                    "ws_client_test.py", [ws(1), app, room, "ann", "tok-ann", "ben", "tok-ben", ws(2)],
                    environment: ["SSL_CERT_FILE": certs.caPath])
                #expect(result.status == 0 && result.output.contains("interop ok"), "\(result.output)")
            }
            for c in [ann, ben, carl] { await c.close() }
        }
    }

    @Test("T1: `parley dev --tls` serves HTTPS with a local CA it makes once and keeps")
    func devClusterServesTLS() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parley-dev-tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ports = try LocalNodeProcesses.freePorts(3)
        let data = folder.appendingPathComponent("data").path
        let ca = data + "/tls/ca.pem"
        var firstCA: String?
        for run in 0..<2 {
            let dev = Process()
            dev.executableURL = try LocalNodeProcesses.parleyExecutable()
            dev.arguments = ["dev", "--tls", "--nodes", "1", "--shards", "4", "--data", data, "--http-port", "\(ports[0])",
                             "--peer-port", "\(ports[1])", "--ops-port", "\(ports[2])",
                             // No demo page: its default port (node 1's minus one) may be another test cluster's.
                             "--demo-port", "0"]
            dev.standardOutput = FileHandle.nullDevice
            dev.standardError = FileHandle.nullDevice
            try dev.run()
            defer { if dev.isRunning { dev.interrupt(); dev.waitUntilExit() } }
            var answer = (status: Int32(-1), output: "")
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                answer = try await runTool("/usr/bin/curl", ["-fsS", "--max-time", "2", "--cacert", ca,
                                                        "https://localhost:\(ports[0])/healthz"])
                if answer.status == 0 { break }
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(answer.status == 0, "run \(run): \(answer.output)")
            let text = try String(contentsOfFile: ca, encoding: .utf8)
            if let firstCA { #expect(text == firstCA, "the CA changed between runs") } else { firstCA = text }
            let key = try FileManager.default.attributesOfItem(atPath: data + "/tls/ca.key")[.posixPermissions] as? Int
            #expect(key == 0o600)
        }
    }
}
