import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1

/// How the tools read a node's HTTP endpoints — the `parley` commands (`status`, the benches) and the tests, which
/// also call the receivers they start — with URLSession's two calls (`data(from:)`, `data(for:)`), on
/// AsyncHTTPClient. Not Foundation's URLSession: on Linux it runs each socket as a libdispatch source, and that
/// family of teardown races takes the whole process down now and then (a `cluster/test.sh` run ended by SIGILL in
/// `_dispatch_source_refs_finalize_unregistration` on libdispatch's manager thread in session 50;
/// swift-corelibs-foundation #4791 and #5469 are the same family, refused connections among the triggers — and
/// the tests and `parley status --watch` keep calling nodes that are down).
public struct ToolHTTP: Sendable {
    public static let shared = ToolHTTP()
    /// Longest answer a tool reads (a node's `/metrics` or `/status/cluster` is far smaller).
    static let maxAnswerBytes = 64 << 20

    private let client = HTTPClient.shared

    public func data(from url: URL) async throws -> (Data, URLResponse) {
        try await data(for: URLRequest(url: url))
    }

    /// The request's method, headers, body and `timeoutInterval` (as URLSession, for the whole call); redirects
    /// are followed, as URLSession follows them (AsyncHTTPClient's shared client: up to 20).
    public func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        guard let url = request.url else { throw URLError(.badURL) }
        var call = HTTPClientRequest(url: url.absoluteString)
        call.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        for (name, value) in request.allHTTPHeaderFields ?? [:] { call.headers.add(name: name, value: value) }
        if let body = request.httpBody { call.body = .bytes(ByteBuffer(bytes: body)) }
        let timeout = request.timeoutInterval > 0 ? request.timeoutInterval : 60
        let answer = try await client.execute(call, deadline: .now() + .milliseconds(Int64(timeout * 1000)))
        let body = try await answer.body.collect(upTo: Self.maxAnswerBytes)
        var fields: [String: String] = [:]
        for (name, value) in answer.headers { fields[name] = fields[name].map { "\($0), \(value)" } ?? value }
        let response = HTTPURLResponse(url: url, statusCode: Int(answer.status.code), httpVersion: "HTTP/1.1",
                                       headerFields: fields)!
        return (Data(body.readableBytesView), response)
    }
}
