import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import ParleyEdge
import Synchronization

/// A WebSocket client for the tests (HummingbirdWSClient over a real socket): sends frames, collects every
/// frame the server writes, and remembers the close code.
final class TestClient: Sendable {
    enum Command: Sendable {
        case text(String)
        case binary([UInt8])
        case fragments([String])
        /// Fragments of a message that never ends (no frame has FIN).
        case unfinished([String])
        /// A WebSocket ping frame (not the protocol's `ping` op).
        case pingFrame
        case close
    }

    private let commands: AsyncStream<Command>.Continuation
    private let inbox = Mutex<[JSONValue]>([])
    private let closeCode = Mutex<Int?>(nil)
    private let finished = Mutex(false)
    private let nextId = Mutex<Int64>(100)
    private let running: Task<Void, Never>

    private init(commands: AsyncStream<Command>.Continuation, running: Task<Void, Never>) {
        self.commands = commands
        self.running = running
    }

    static func connect(url: String) async throws -> TestClient {
        let (stream, continuation) = AsyncStream<Command>.makeStream()
        let box = LockedBox<TestClient?>(nil)
        let connected = LockedBox(false)
        var logger = Logger(label: "edge-test-client")
        logger.logLevel = .warning
        var config = WebSocketClientConfiguration()
        config.maxFrameSize = 4 << 20
        config.autoPing = .disabled
        let running = Task {
            let frame = try? await WebSocketClient.connect(url: url, configuration: config, logger: logger) { inbound, outbound, _ in
                connected.set(true)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await command in stream {
                            switch command {
                            case .text(let s):
                                try await outbound.write(.text(s))
                            case .binary(let b):
                                try await outbound.write(.binary(ByteBuffer(bytes: b)))
                            case .fragments(let parts):
                                for (i, part) in parts.enumerated() {
                                    let frame = WebSocketFrame(fin: i == parts.count - 1, opcode: i == 0 ? .text : .continuation,
                                                               data: ByteBuffer(string: part))
                                    try await outbound.write(.custom(frame))
                                }
                            case .unfinished(let parts):
                                for (i, part) in parts.enumerated() {
                                    let frame = WebSocketFrame(fin: false, opcode: i == 0 ? .text : .continuation,
                                                               data: ByteBuffer(string: part))
                                    try await outbound.write(.custom(frame))
                                }
                            case .pingFrame:
                                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())))
                            case .close:
                                try await outbound.close(.normalClosure, reason: nil)
                                return
                            }
                        }
                    }
                    for try await message in inbound.messages(maxSize: 4 << 20) {
                        if case .text(let text) = message, let value = JSONValue.parse(text) {
                            box.value?.inbox.withLock { $0.append(value) }
                        }
                    }
                    group.cancelAll()
                }
            }
            box.value?.closeCode.withLock { $0 = frame.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) } ?? 0 }
            box.value?.finished.withLock { $0 = true }
        }
        let client = TestClient(commands: continuation, running: running)
        box.set(client)
        // Generous: the suites that run real node processes beside this one can hold the machine's two
        // cores for seconds at a time.
        let deadline = ContinuousClock.now + .seconds(15)
        while !connected.value {
            if client.finished.withLock({ $0 }) { throw EdgeTestError.unexpected("connection refused") }
            guard ContinuousClock.now < deadline else { throw EdgeTestError.timeout("connect") }
            try await Task.sleep(for: .milliseconds(5))
        }
        return client
    }

    func send(_ text: String) { commands.yield(.text(text)) }
    func send(_ command: Command) { commands.yield(command) }

    func send(json: [String: Any]) {
        let data = try! JSONSerialization.data(withJSONObject: json)
        send(String(decoding: data, as: UTF8.self))
    }

    /// Sends a request and waits for its answer.
    func call(_ op: String, _ fields: [String: Any] = [:]) async throws -> JSONValue {
        let id = nextId.withLock { $0 += 1; return $0 }
        var json = fields
        json["id"] = id
        json["op"] = op
        send(json: json)
        return try await answer(id)
    }

    /// Every unread frame, in arrival order, left unread.
    func unread() -> [JSONValue] { inbox.withLock { $0 } }

    /// Whether the answer to `id` has arrived and is still unread.
    func hasAnswer(_ id: Int64) -> Bool {
        inbox.withLock { frames in frames.contains { $0["id"] == .int(id) && $0["event"] == nil } }
    }

    func answer(_ id: Int64, timeout: Duration = .seconds(5)) async throws -> JSONValue {
        try await take(timeout: timeout, what: "answer \(id)") { $0["id"] == .int(id) && $0["event"] == nil }
    }

    /// The first unread event matching `match` (events of other kinds stay unread).
    func event(_ name: String, timeout: Duration = .seconds(5), where match: @escaping (JSONValue) -> Bool = { _ in true })
        async throws -> JSONValue
    {
        try await take(timeout: timeout, what: "event \(name)") { $0["event"] == .string(name) && match($0) }
    }

    /// Waits a while and returns every unread event (in arrival order), removing them.
    func drainEvents(after wait: Duration = .milliseconds(300)) async throws -> [JSONValue] {
        try await Task.sleep(for: wait)
        return inbox.withLock { frames in
            let events = frames.filter { $0["event"] != nil }
            frames.removeAll { $0["event"] != nil }
            return events
        }
    }

    private func take(timeout: Duration, what: String, _ match: @escaping (JSONValue) -> Bool) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while true {
            let found = inbox.withLock { frames -> JSONValue? in
                guard let i = frames.firstIndex(where: match) else { return nil }
                return frames.remove(at: i)
            }
            if let found { return found }
            if finished.withLock({ $0 }) { throw EdgeTestError.unexpected("closed while waiting for \(what)") }
            guard ContinuousClock.now < deadline else {
                throw EdgeTestError.timeout("\(what); unread: \(inbox.withLock { $0 })")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits for the server to close the connection and returns its close code.
    func closed(timeout: Duration = .seconds(5)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while !finished.withLock({ $0 }) {
            guard ContinuousClock.now < deadline else { throw EdgeTestError.timeout("close") }
            try await Task.sleep(for: .milliseconds(5))
        }
        return closeCode.withLock { $0 } ?? 0
    }

    var isClosed: Bool { finished.withLock { $0 } }

    func close() async {
        commands.yield(.close)
        _ = await running.value
    }
}

extension JSONValue {
    var int: Int64? {
        if case .int(let i) = self { return i }
        return nil
    }

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var array: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    var errorCode: Int64? { self["error"]?["code"]?.int }
}
