import NIOCore
import Synchronization

/// The edge's handle on one client WebSocket: frames and the close go to the connection's event loop through
/// that loop's `LoopOutbox`, in the order the edge sent them.
public final class ClientSocket: Sendable {
    let eventLoop: any EventLoop
    private let handler: NIOLoopBound<ClientSocketHandler>
    let outbox: LoopOutbox
    /// What the connection's loop and the edge both know of its sessions.
    let sessions = ConnectionSessions()

    init(handler: ClientSocketHandler, eventLoop: any EventLoop, outbox: LoopOutbox) {
        self.handler = NIOLoopBound(handler, eventLoop: eventLoop)
        self.eventLoop = eventLoop
        self.outbox = outbox
    }

    /// One framed text message; a fanned-out event is one frame shared by every connection it goes to.
    func send(_ frame: TextFrame) {
        outbox.add(self, .text(frame))
    }

    /// Closes the WebSocket with this code; nothing is written after it.
    func close(code: UInt16, reason: String) {
        outbox.add(self, .close(code: code, reason: reason))
    }

    /// The connection's `hello` was accepted: it may now send messages of full size (SPEC A9).
    func helloAccepted() {
        outbox.add(self, .helloAccepted)
    }

    /// On the event loop: hands one queued write to the connection's handler.
    fileprivate func apply(_ write: LoopOutbox.Write) {
        switch write {
        case .text(let frame): handler.value.write(text: frame)
        case .close(let code, let reason): handler.value.sendClose(code: code, reason: reason)
        case .helloAccepted: handler.value.helloAccepted()
        }
    }

    fileprivate func flush() {
        handler.value.flushWrites()
    }
}

/// The writes the edge queued for the connections of one event loop. The first write into an empty outbox
/// schedules one drain on the loop; whatever arrives until it runs goes out with it, each connection flushed
/// once per drain (one syscall per connection per burst, however many events the burst holds).
final class LoopOutbox: Sendable {
    enum Write: Sendable {
        case text(TextFrame)
        case close(code: UInt16, reason: String)
        case helloAccepted
    }

    private let eventLoop: any EventLoop
    private let pending = Mutex<[(ClientSocket, Write)]>([])

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func add(_ socket: ClientSocket, _ write: Write) {
        let first = pending.withLock { queue in
            queue.append((socket, write))
            return queue.count == 1
        }
        if first { eventLoop.execute { self.drain() } }
    }

    /// Several writes at once (one page of a shard's events for this loop's connections): one lock, at most
    /// one drain scheduled, and each connection's frames of the page go out in one flush.
    func add(contentsOf writes: [(ClientSocket, Write)]) {
        guard !writes.isEmpty else { return }
        let first = pending.withLock { queue in
            let wasEmpty = queue.isEmpty
            queue.append(contentsOf: writes)
            return wasEmpty
        }
        if first { eventLoop.execute { self.drain() } }
    }

    private func drain() {
        let batch = pending.withLock { queue in
            var taken: [(ClientSocket, Write)] = []
            swap(&taken, &queue)
            return taken
        }
        for (socket, write) in batch { socket.apply(write) }
        for (socket, _) in batch { socket.flush() }  // only the first call per connection flushes
    }
}

/// One `LoopOutbox` per event loop, created on first use.
final class LoopOutboxes: Sendable {
    private let outboxes = Mutex<[ObjectIdentifier: LoopOutbox]>([:])

    func outbox(for loop: any EventLoop) -> LoopOutbox {
        outboxes.withLock { all in
            if let existing = all[ObjectIdentifier(loop)] { return existing }
            let made = LoopOutbox(eventLoop: loop)
            all[ObjectIdentifier(loop)] = made
            return made
        }
    }
}

/// Frames the edge gathered for many connections (one page of a shard's feed), handed to each event loop's
/// outbox at once when the page is done or before the edge awaits anything (so nothing it sends meanwhile
/// overtakes them).
struct GatheredWrites {
    private var byLoop: [ObjectIdentifier: (outbox: LoopOutbox, writes: [(ClientSocket, LoopOutbox.Write)])] = [:]

    mutating func add(_ frame: TextFrame, to socket: ClientSocket) {
        byLoop[ObjectIdentifier(socket.outbox), default: (socket.outbox, [])].writes.append((socket, .text(frame)))
    }

    /// Hands everything gathered to the outboxes and starts empty.
    mutating func handOver() {
        guard !byLoop.isEmpty else { return }
        for (_, loop) in byLoop { loop.outbox.add(contentsOf: loop.writes) }
        byLoop = [:]
    }
}
