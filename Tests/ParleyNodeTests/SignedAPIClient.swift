import Foundation
import ParleyNode
import ParleyTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyAPI

/// An app server's view of the server API in tests: signed POSTs over real HTTP, answers as JSON objects.
struct SignedAPIClient {
    var appKey: String
    var secret: String
    /// Sign with CheckSum2 (method, path and body; what the docs and the SDK use, and what a new app requires,
    /// SPEC T2); false: NIM's CheckSum alone, for an app that chose it (`allowNimCheckSum`).
    var signsBody = true

    struct Answer {
        var status: Int
        var json: [String: Any]
        var code: Int? { json["code"] as? Int }
        var data: [String: Any] { json["data"] as? [String: Any] ?? [:] }
    }

    /// Signs with a fresh nonce and the current time unless the test overrides a header.
    func post(_ base: String, _ path: String, _ body: Any, headers override: [String: String?] = [:],
              rawBody: Data? = nil) async throws -> Answer {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = "POST"
        request.timeoutInterval = 15
        request.httpBody = try rawBody ?? JSONSerialization.data(withJSONObject: body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let nonce = UUID().uuidString, now = Int64(Date().timeIntervalSince1970)
        var headers = signsBody
            ? RequestSignature.signedHeaders(appKey: appKey, secret: secret, nonce: nonce, curTime: now, path: path,
                                             body: request.httpBody ?? Data())
            : RequestSignature.headers(appKey: appKey, secret: secret, nonce: nonce, curTime: now)
        for (name, value) in override { headers[name] = value }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await ToolHTTP.shared.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return Answer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, json: json)
    }
}

extension SignedAPIClient {
    /// SPEC T1: the same signed POST over HTTPS with curl, trusting only `caFile` (Foundation's URLSession on
    /// Linux takes no private CA).
    func postOverTLS(_ base: String, _ path: String, _ body: Any, caFile: String) async throws -> Answer {
        let data = try JSONSerialization.data(withJSONObject: body)
        let headers = RequestSignature.signedHeaders(appKey: appKey, secret: secret, nonce: UUID().uuidString,
                                                     curTime: Int64(Date().timeIntervalSince1970), path: path, body: data)
        var arguments = ["-sS", "--max-time", "15", "--cacert", caFile, "-X", "POST", base + path,
                         "-H", "Content-Type: application/json", "--data-binary", String(decoding: data, as: UTF8.self),
                         "-w", "\n%{http_code}"]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["-H", "\(name): \(value)"] }
        let result = try await runTool("/usr/bin/curl", arguments)
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        let status = lines.last.flatMap { Int($0) } ?? 0
        let json = (try? JSONSerialization.jsonObject(with: Data(lines.dropLast().joined(separator: "\n").utf8))) as? [String: Any]
        return Answer(status: status, json: json ?? ["curl": result.output])
    }
}

extension LocalCluster {
    /// SPEC T2: the app behind `nim` (a client signing with NIM's CheckSum alone) makes the explicit choice to
    /// accept it (`/v1/app/setSigning`, itself signed with CheckSum2, as a new app requires), and every node
    /// takes NIM-signed requests before this returns.
    func allowNimCheckSum(_ nim: SignedAPIClient, seconds: Double = 30) async throws {
        var signer = nim
        signer.signsBody = true
        try await waitForSignedAPI(signer, seconds: seconds)
        let set = try await signer.post(http(ids[0]), "/v1/app/setSigning", ["requireSignedBody": false])
        guard set.status == 200 else { throw LocalClusterError.failed("setSigning: \(set.json)") }
        try await waitForSignedAPI(nim, seconds: seconds)
    }

    /// Waits until every node answers a signed read: the app is in meta and the probe room's shard has a leader.
    func waitForSignedAPI(_ api: SignedAPIClient, seconds: Double = 30) async throws {
        try await eventually("the API to answer on every node", seconds: seconds) {
            for id in ids {
                guard let a = try? await api.post(http(id), "/v1/room/get", ["roomId": "probe"]), a.status == 404 else {
                    return false
                }
            }
            return true
        }
    }
}
