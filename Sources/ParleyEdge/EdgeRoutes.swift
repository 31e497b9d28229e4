import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

/// The WebSocket side of the HTTP port: `/ws` (the client protocol) and, when `EdgeSettings.servesEcho` is on,
/// `/ws/echo` (the same framing stack answering every message with itself, for the Autobahn conformance cases,
/// which send arbitrary frames and expect them back — something the chat protocol never does).
///
/// Hummingbird upgrades through a router of its own, given to the server builder, beside the application's
/// HTTP router:
///
///     let app = Application(router: httpRouter,
///                           server: .http1WebSocketUpgrade(webSocketRouter: EdgeRoutes.router(edge: edge),
///                                                          configuration: EdgeRoutes.configuration(edge.settings)),
///                           configuration: …)
///
/// Requests that are not upgrades go to `httpRouter` as before.
public enum EdgeRoutes {
    /// Frames larger than this are refused by the WebSocket layer itself (close 1009 without an answer);
    /// messages between `maxFrameBytes` and this get the protocol's 4005 answer first.
    public static let transportFrameLimit = 1 << 20

    public static func configuration(_ settings: EdgeSettings) -> HTTP1WebSocketUpgradeChannel.Configuration {
        .init(http1: .init(), ws: .init(maxFrameSize: max(transportFrameLimit, settings.maxFrameBytes),
                                        autoPing: .disabled, closeTimeout: .seconds(5), validateUTF8: true))
    }

    public static func router(edge: Edge) -> Router<BasicWebSocketRequestContext> {
        let router = Router(context: BasicWebSocketRequestContext.self)
        add(to: router, edge: edge)
        return router
    }

    public static func add(to router: Router<BasicWebSocketRequestContext>, edge: Edge) {
        router.ws("/ws") { inbound, outbound, _ in
            try await serve(edge: edge, inbound: inbound, outbound: outbound)
        }
        guard edge.settings.servesEcho else { return }
        router.ws("/ws/echo") { inbound, outbound, _ in
            for try await message in inbound.messages(maxSize: transportFrameLimit) {
                switch message {
                case .text(let s): try await outbound.write(.text(s))
                case .binary(let b): try await outbound.write(.binary(b))
                }
            }
        }
    }

    /// One client connection: a writer draining the edge's outbox, an idle watchdog, and the reader.
    static func serve(edge: Edge, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let (outbox, continuation) = AsyncStream<Outbound>.makeStream(
            bufferingPolicy: .bufferingOldest(edge.settings.maxQueuedFrames))
        let connection = await edge.open(outbox: continuation)
        let settings = edge.settings
        let lastActivity = ActivityClock()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await item in outbox {
                    do {
                        switch item {
                        case .text(let frame):
                            // A custom frame keeps the shared buffer (`.text(String)` would copy it per connection).
                            try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: frame)))
                        case .close(let code, let reason):
                            try await outbound.close(.init(codeNumber: Int(code)), reason: reason)
                            return
                        }
                    } catch {
                        return
                    }
                }
                // The outbox ended without a close: the client was too slow (or the connection is ending anyway).
                if !Task.isCancelled { try? await outbound.close(.policyViolation, reason: "too slow") }
            }
            group.addTask {
                let idle = Duration.milliseconds(settings.idleTimeoutMillis)
                let step = min(Duration.seconds(1), idle / 4)
                while !Task.isCancelled {
                    try? await Task.sleep(for: step)
                    if ContinuousClock.now - lastActivity.last >= idle {
                        await edge.idle(connection)
                        return
                    }
                }
            }
            await read(edge: edge, connection: connection, inbound: inbound, settings: settings,
                       touch: { lastActivity.touch() })
            group.cancelAll()
        }
        await edge.closed(connection)
    }

    /// Reassembles messages (with the protocol's own size limit) and hands text to the edge in order.
    private static func read(edge: Edge, connection: UInt64, inbound: WebSocketInboundStream, settings: EdgeSettings,
                             touch: @Sendable () -> Void) async {
        var message = ByteBuffer()
        var refused = false
        do {
            for try await frame in inbound {
                touch()
                if refused { continue }  // draining until the close handshake ends the stream
                if frame.opcode == .binary {
                    refused = true
                    await edge.refuseFrame(connection, .malformedFrame("binary frame"), closeCode: 1003)
                    continue
                }
                var data = frame.data
                guard message.readableBytes + data.readableBytes <= settings.maxFrameBytes else {
                    refused = true
                    await edge.refuseFrame(connection, .frameTooLarge(settings.maxFrameBytes), closeCode: 1009)
                    continue
                }
                message.writeBuffer(&data)
                guard frame.fin else { continue }
                guard let text = String(validating: message.readableBytesView, as: UTF8.self) else {
                    refused = true
                    await edge.refuseFrame(connection, .malformedFrame("text is not UTF-8"), closeCode: 1007)
                    continue
                }
                message.clear()
                await edge.receive(connection, text)
            }
        } catch {
            // The channel failed; the connection ends below.
        }
    }
}

/// When a connection last sent a frame (the idle timeout's clock), shared by its reader and watchdog.
final class ActivityClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    var last: ContinuousClock.Instant { instant.withLock { $0 } }

    func touch() {
        instant.withLock { $0 = .now }
    }
}
