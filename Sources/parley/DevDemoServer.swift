import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ParleyAPI

/// `parley dev`'s demo chat page and the app server it needs (issue 37), on 127.0.0.1 only: serves the
/// JavaScript SDK (`Sources/ParleyJS`), the demo page, and the two calls an app server answers its web clients —
/// a user token (`POST /session`) and a room's edges (`POST /addresses`) — made with the server API, signed with
/// the dev app's secret like any app server's. The token endpoint exists only in this process: no `parley node`
/// serves anything like it.
final class DevDemoServer: Sendable {
    let sdkFolder: URL
    let appKey: String
    let appSecret: String
    /// The nodes' client URLs (`http://127.0.0.1:8101`, …), tried in order for every server API call.
    let nodeURLs: [String]
    let secure: Bool
    private let tokens = TokenBook()
    private let client: HTTPClient

    /// `caFile`: the local CA of `parley dev --tls`, the only one the server API calls trust then.
    init(sdkFolder: URL, appKey: String, appSecret: String, nodeURLs: [String], caFile: String?) throws {
        self.sdkFolder = sdkFolder
        self.appKey = appKey
        self.appSecret = appSecret
        self.nodeURLs = nodeURLs
        self.secure = caFile != nil
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(3), read: .seconds(5)))
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            configuration.tlsConfiguration = tls
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The SDK's folder: `Sources/ParleyJS` under the working directory or above the executable
    /// (`.build/debug/parley`); nil when neither has it (the demo is then off, and `parley dev` says so).
    static func findSDK() -> URL? {
        var candidates = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        var up = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(up)
            up = up.deletingLastPathComponent()
        }
        return candidates.map { $0.appendingPathComponent("Sources/ParleyJS") }
            .first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("parley.js").path) }
    }

    func start(port: Int, group: EventLoopGroup) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(DevDemoHTTPHandler(server: self))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
    }

    struct Reply: Sendable {
        var status: HTTPResponseStatus
        var contentType: String
        var body: Data

        static func json(_ value: Any, status: HTTPResponseStatus = .ok) -> Reply {
            Reply(status: status, contentType: "application/json",
                  body: (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])) ?? Data("{}".utf8))
        }

        static func error(_ status: HTTPResponseStatus, _ message: String) -> Reply { json(["error": message], status: status) }
    }

    /// One request: a static file or one of the two app-server calls.
    func answer(method: HTTPMethod, path: String, body: Data) async -> Reply {
        switch (method, path) {
        case (.GET, "/"), (.GET, "/index.html"): return file(sdkFolder.appendingPathComponent("demo/index.html"))
        case (.POST, "/session"): return await session(body)
        case (.POST, "/addresses"): return await addresses(body)
        case (.GET, _) where path.hasPrefix("/sdk/"): return staticFile(String(path.dropFirst(5)), in: sdkFolder)
        case (.GET, _) where path.hasPrefix("/demo/"):
            return staticFile(String(path.dropFirst(6)), in: sdkFolder.appendingPathComponent("demo"))
        default: return .error(.notFound, "no such page")
        }
    }

    /// Only plain file names (no folders, no dots but the extension's): nothing outside the two folders.
    private func staticFile(_ name: String, in folder: URL) -> Reply {
        guard name.range(of: #"^[A-Za-z][A-Za-z0-9_-]*(\.d)?\.(js|ts|html|css)$"#, options: .regularExpression) != nil else {
            return .error(.notFound, "no such file")
        }
        return file(folder.appendingPathComponent(name))
    }

    private func file(_ url: URL) -> Reply {
        guard let data = FileManager.default.contents(atPath: url.path) else { return .error(.notFound, "no such file") }
        let type = switch url.pathExtension {
        case "js": "text/javascript; charset=utf-8"
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        default: "text/plain; charset=utf-8"
        }
        return Reply(status: .ok, contentType: type, body: data)
    }

    // MARK: The app server's two calls

    /// `{account, nickname?}` → `{appKey, account, token, secure}`: the user is created with a fresh token, or,
    /// made before this process started, given a fresh one (`refreshToken`). One token per account while this
    /// process runs, so two windows of one user both stay valid.
    private func session(_ body: Data) async -> Reply {
        guard let fields = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let account = fields["account"] as? String, Self.validId(account) else {
            return .error(.badRequest, "account: 1-32 letters, digits, '-' or '_'")
        }
        let nickname = (fields["nickname"] as? String).map { String($0.prefix(32)) } ?? account
        if let known = tokens.token(for: account) {
            return .json(["appKey": appKey, "account": account, "token": known, "secure": secure])
        }
        let token = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        do {
            var (code, _) = try await call("/v1/user/create", ["accid": account, "name": nickname, "token": token])
            if code == 10409 { (code, _) = try await call("/v1/user/refreshToken", ["accid": account, "token": token]) }
            guard code == 200 else { return .error(.badGateway, "the server API answered \(code)") }
        } catch {
            return .error(.badGateway, "no node answered the server API: \(error)")
        }
        tokens.set(token, for: account)
        return .json(["appKey": appKey, "account": account, "token": token, "secure": secure])
    }

    /// `{roomId, account, edge?}` → `{addresses}`: the room is made (by `account`) if missing, then the room
    /// address lookup (E6); `edge` n puts node n's address first, so two windows can sit on two nodes.
    private func addresses(_ body: Data) async -> Reply {
        guard let fields = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let roomId = fields["roomId"] as? String, Self.validId(roomId),
              let account = fields["account"] as? String, Self.validId(account) else {
            return .error(.badRequest, "roomId and account: 1-32 letters, digits, '-' or '_'")
        }
        do {
            // 200 made it; an existing room is answered with an error code and is fine.
            _ = try await call("/v1/room/create", ["roomId": roomId, "creator": account, "name": roomId])
            let (code, data) = try await call("/v1/room/requestAddr", ["roomId": roomId, "accid": account, "clientType": "web"])
            guard code == 200, var list = data["addr"] as? [String] else {
                return .error(.badGateway, "requestAddr answered \(code)")
            }
            if let edge = fields["edge"] as? Int, (1...nodeURLs.count).contains(edge) {
                let wanted = nodeURLs[edge - 1].replacingOccurrences(of: "http://", with: "")
                    .replacingOccurrences(of: "https://", with: "")
                list.removeAll { $0 == wanted }
                list.insert(wanted, at: 0)
            }
            return .json(["addresses": list])
        } catch {
            return .error(.badGateway, "no node answered the server API: \(error)")
        }
    }

    static func validId(_ id: String) -> Bool {
        id.range(of: #"^[A-Za-z0-9_-]{1,32}$"#, options: .regularExpression) != nil
    }

    /// One signed server API call (CheckSum2, docs/api.md), to the first node that answers.
    private func call(_ path: String, _ fields: [String: Any]) async throws -> (Int, [String: Any]) {
        let body = try JSONSerialization.data(withJSONObject: fields)
        var lastError: Error = DemoError.busy(0)
        for node in nodeURLs {
            let nonce = UUID().uuidString
            let time = Int64(Date().timeIntervalSince1970)
            var request = HTTPClientRequest(url: node + path)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "AppKey", value: appKey)
            request.headers.add(name: "Nonce", value: nonce)
            request.headers.add(name: "CurTime", value: String(time))
            request.headers.add(name: "CheckSum2", value: RequestSignature.checkSum2(
                secret: appSecret, method: "POST", path: path, nonce: nonce, curTime: time, body: body))
            request.body = .bytes(ByteBuffer(bytes: body))
            do {
                let response = try await client.execute(request, timeout: .seconds(5))
                let bytes = try await response.body.collect(upTo: 1 << 20)
                let answer = try JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any] ?? [:]
                let code = answer["code"] as? Int ?? 0
                // No leader or no quorum yet: another node may do better.
                if code == 5030 || code == 5040 { lastError = DemoError.busy(code); continue }
                return (code, answer["data"] as? [String: Any] ?? [:])
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    enum DemoError: Error { case busy(Int) }

    private final class TokenBook: @unchecked Sendable {
        private let lock = NSLock()
        private var tokens: [String: String] = [:]
        func token(for account: String) -> String? { lock.withLock { tokens[account] } }
        func set(_ token: String, for account: String) { lock.withLock { tokens[account] = token } }
    }
}

/// Thin NIO handler: gathers one request, lets the server answer it, writes the reply.
private final class DevDemoHTTPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: DevDemoServer
    private var head: HTTPRequestHead?
    private var body = Data()

    init(server: DevDemoServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = Data()
        case .body(var chunk):
            if body.count < 64 * 1024, let bytes = chunk.readBytes(length: chunk.readableBytes) { body.append(contentsOf: bytes) }
        case .end:
            guard let head else { return }
            let path = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "/")
            let keepAlive = head.isKeepAlive
            let server = self.server, body = self.body
            let loop = context.eventLoop
            let bound = NIOLoopBound(context, eventLoop: loop)
            Task {
                let reply = await server.answer(method: head.method, path: path, body: body)
                loop.execute { Self.write(reply, keepAlive: keepAlive, context: bound.value) }
            }
        }
    }

    private static func write(_ reply: DevDemoServer.Reply, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: reply.contentType)
        headers.add(name: "Content-Length", value: String(reply.body.count))
        headers.add(name: "Cache-Control", value: "no-store")
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: reply.status, headers: headers))), promise: nil)
        context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: reply.body)))), promise: nil)
        let done = context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
        if !keepAlive { done.whenComplete { _ in context.close(promise: nil) } }
    }
}
