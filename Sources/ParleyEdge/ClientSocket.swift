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

    /// On the event loop: hands one queued write to the connection's handler; true when the connection now
    /// waits for a flush (the first frame since its last one).
    fileprivate func apply(_ write: LoopOutbox.Write) -> Bool {
        switch write {
        case .text(let frame): return apply(frame)
        case .close(let code, let reason): handler.value.sendClose(code: code, reason: reason)
        case .helloAccepted: handler.value.helloAccepted()
        }
        return false
    }

    fileprivate func apply(_ frame: TextFrame) -> Bool {
        handler.value.write(text: frame)
    }

    fileprivate func flush() {
        handler.value.flushWrites()
    }
}

/// The writes the edge queued for the connections of one event loop. An answer, a close or a hello drains the
/// outbox on the loop at once; fanned-out events (`add(contentsOf:)`) go out at once too unless events last left
/// this loop less than `spacing` ago, then at that moment plus `spacing` — so under a burst each connection gets
/// several events in one flush (one `writev` each, issue 35 item 3), and an event after a quiet moment is not
/// held. Whatever is queued leaves in the order it came; each connection is flushed once per drain.
final class LoopOutbox: Sendable {
    enum Write: Sendable {
        case text(TextFrame)
        case close(code: UInt16, reason: String)
        case helloAccepted
    }

    /// One queued write: to one connection, or one event's frame to many (a room's steady members on this loop).
    enum Entry: Sendable {
        case one(ClientSocket, Write)
        case shared(TextFrame, [ClientSocket])
    }

    private struct Queue {
        var writes: [Entry] = []
        /// A drain is due on the loop now.
        var drainNow = false
        /// A drain is scheduled for later (spaced events waiting).
        var drainLater = false
        /// Events are among `writes`.
        var holdsEvents = false
        /// When events last left: answers do not count (they are not spaced, and a sender's answer must not
        /// hold back the fan-out of its message).
        var lastEvents = NIODeadline.uptimeNanoseconds(0)
    }

    private let eventLoop: any EventLoop
    private let spacing: TimeAmount
    private let pending = Mutex(Queue())

    init(eventLoop: any EventLoop, spacing: TimeAmount = .zero) {
        self.eventLoop = eventLoop
        self.spacing = spacing
    }

    /// An answer, a close or a hello: drained on the loop at once (with whatever events wait before it).
    func add(_ socket: ClientSocket, _ write: Write) {
        let schedule = pending.withLock { queue in
            queue.writes.append(.one(socket, write))
            if queue.drainNow { return false }
            queue.drainNow = true
            return true
        }
        if schedule { eventLoop.execute { self.drain(timer: false) } }
    }

    /// Several writes at once (one page of a shard's events for this loop's connections): one lock, at most
    /// one drain scheduled, and each connection's frames of the page go out in one flush.
    func add(contentsOf writes: [Entry]) {
        guard !writes.isEmpty else { return }
        enum Drain { case scheduled, now, at(NIODeadline) }
        let drain: Drain = pending.withLock { queue in
            queue.writes.append(contentsOf: writes)
            queue.holdsEvents = true
            if queue.drainNow || queue.drainLater { return .scheduled }
            let at = queue.lastEvents + spacing
            if spacing > .zero, at > .now() {
                queue.drainLater = true
                return .at(at)
            }
            queue.drainNow = true
            return .now
        }
        switch drain {
        case .scheduled: break
        case .now: eventLoop.execute { self.drain(timer: false) }
        // An answer may drain the queue before this runs: events that come meanwhile wait for this drain rather
        // than set another timer (one per spacing at most, however many answers leave in between).
        case .at(let deadline): eventLoop.scheduleTask(deadline: deadline) { self.drain(timer: true) }
        }
    }

    private func drain(timer: Bool) {
        let spaced = spacing > .zero
        let batch = pending.withLock { queue in
            var taken: [Entry] = []
            swap(&taken, &queue.writes)
            if timer { queue.drainLater = false } else { queue.drainNow = false }
            if spaced && queue.holdsEvents { queue.lastEvents = .now() }
            queue.holdsEvents = false
            return taken
        }
        // Each connection is flushed once, after all its frames of the batch: the ones a write left waiting.
        var waiting: [ClientSocket] = []
        for entry in batch {
            switch entry {
            case .one(let socket, let write): if socket.apply(write) { waiting.append(socket) }
            case .shared(let frame, let sockets): for socket in sockets where socket.apply(frame) { waiting.append(socket) }
            }
        }
        for socket in waiting { socket.flush() }
    }
}

/// One `LoopOutbox` per event loop, created on first use.
final class LoopOutboxes: Sendable {
    private let outboxes = Mutex<[ObjectIdentifier: LoopOutbox]>([:])
    /// The least time between two drains of fanned-out events on one loop (`EdgeSettings.deliverySpacingMillis`).
    private let spacing: TimeAmount

    init(spacing: TimeAmount = .zero) {
        self.spacing = spacing
    }

    func outbox(for loop: any EventLoop) -> LoopOutbox {
        outboxes.withLock { all in
            if let existing = all[ObjectIdentifier(loop)] { return existing }
            let made = LoopOutbox(eventLoop: loop, spacing: spacing)
            all[ObjectIdentifier(loop)] = made
            return made
        }
    }
}

/// Frames the edge gathered for many connections (one page of a shard's feed), handed to each event loop's
/// outbox at once when the page is done or before the edge awaits anything (so nothing it sends meanwhile
/// overtakes them).
struct GatheredWrites {
    private var byLoop: [ObjectIdentifier: (outbox: LoopOutbox, writes: [LoopOutbox.Entry])] = [:]

    mutating func add(_ frame: TextFrame, to socket: ClientSocket) {
        byLoop[ObjectIdentifier(socket.outbox), default: (socket.outbox, [])].writes.append(.one(socket, .text(frame)))
    }

    /// One frame to many connections of one loop (`outbox` is theirs).
    mutating func add(_ frame: TextFrame, to sockets: [ClientSocket], outbox: LoopOutbox) {
        byLoop[ObjectIdentifier(outbox), default: (outbox, [])].writes.append(.shared(frame, sockets))
    }

    /// Hands everything gathered to the outboxes and starts empty.
    mutating func handOver() {
        guard !byLoop.isEmpty else { return }
        for (_, loop) in byLoop { loop.outbox.add(contentsOf: loop.writes) }
        byLoop = [:]
    }
}
