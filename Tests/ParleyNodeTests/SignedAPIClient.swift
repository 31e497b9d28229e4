import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyAPI

/// An app server's view of the server API in tests: signed POSTs over real HTTP, answers as JSON objects.
struct SignedAPIClient {
    var appKey: String
    var secret: String

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
        var headers = RequestSignature.headers(appKey: appKey, secret: secret, nonce: UUID().uuidString,
                                               curTime: Int64(Date().timeIntervalSince1970))
        for (name, value) in override { headers[name] = value }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return Answer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, json: json)
    }
}
