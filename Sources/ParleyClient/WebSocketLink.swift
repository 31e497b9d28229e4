import HummingbirdWSClient
import Logging
import NIOCore

/// One WebSocket connection to an edge (`ws://ADDRESS/ws`, or `wss://` with TLS; docs/protocol.md "Connection"). It only moves
/// text frames: every inbound one goes to `onText` in arrival order (the next is read only after the
/// previous was handled, which keeps a room's events in seq order), and `onClose` runs once when the
/// connection ends for any reason, including a failed open.
final class WebSocketLink: Sendable {
    let id: Int
    let address: String
    private let writer: WebSocketOutboundWriter
    private let task: Task<Void, Never>

    private init(id: Int, address: String, writer: WebSocketOutboundWriter, task: Task<Void, Never>) {
        self.id = id
        self.address = address
        self.writer = writer
        self.task = task
    }

    /// Connects; throws (415) if the address cannot be reached, refuses the upgrade or does not finish it
    /// within `timeout` (a stopped process still accepts TCP connections into its listen backlog).
    static func open(
        id: Int, address: String, tls: EdgeTLS?, maxMessageBytes: Int, timeout: Duration, logger: Logger,
        onText: @escaping @Sendable (String) async -> Void,
        onClose: @escaping @Sendable () async -> Void
    ) async throws -> WebSocketLink {
        // The client library runs the connection inside its handler closure; the writer is handed out of it
        // so requests can be written from the SDK's own tasks while the closure keeps reading.
        let (ready, readyContinuation) = AsyncStream.makeStream(of: WebSocketOutboundWriter.self)
        let (url, secure) = EdgeTLS.url(of: address, tls: tls)
        let tlsConfiguration = secure ? (tls ?? .systemRoots).configuration : nil
        if secure, let ip = EdgeTLS.ipHost(of: url) {
            throw ChatroomError.lost("\(url): wss needs the edge's host name (its certificate's), not the IP address \(ip)")
        }
        let task = Task {
            do {
                try await WebSocketClient.connect(
                    url: url, configuration: .init(maxFrameSize: maxMessageBytes), tlsConfiguration: tlsConfiguration,
                    logger: logger
                ) { inbound, outbound, _ in
                    readyContinuation.yield(outbound)
                    for try await message in inbound.messages(maxSize: maxMessageBytes) {
                        // Binary frames are not part of the protocol; the server never sends them.
                        if case .text(let text) = message { await onText(text) }
                    }
                }
            } catch {
                logger.debug("connection to \(url) ended: \(error)")
            }
            readyContinuation.finish()
            await onClose()
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { readyContinuation.finish() }
        }
        var waiting = ready.makeAsyncIterator()
        guard let writer = await waiting.next() else {
            task.cancel()
            throw ChatroomError.lost("cannot connect to \(url)")
        }
        timer.cancel()
        return WebSocketLink(id: id, address: address, writer: writer, task: task)
    }

    func send(_ text: String) async throws {
        do {
            try await writer.write(.text(text))
        } catch {
            throw ChatroomError.lost("write to \(address) failed: \(error)")
        }
    }

    /// Starts a normal close; `onClose` follows once the server answers (or the library's close timeout).
    func close() async {
        try? await writer.close(.normalClosure, reason: nil)
    }

    /// Drops the connection without a close handshake (a dead heartbeat: the peer would not answer one).
    func abort() {
        task.cancel()
    }
}
