import NIOConcurrencyHelpers
import NIOCore

/// RPC answers waiting to leave, per event loop. An RPC stream gathers the answers completed during one
/// loop task into one DATA frame and writes it in a task of its own; that task used to run only after the
/// whole ready cycle, behind the cycle's fsync, although the answers were computed before it (entries that
/// were on disk before the cycle). The ready loop now writes them out as soon as it has them, before its sync
/// and its acknowledgements (`RaftHost.answered`); the task remains for answers completed at any other time.
final class PendingAnswers: Sendable {
    /// The streams with answers waiting on one loop, and whether a task to write them is queued.
    private final class OnLoop {
        var writes: [() -> Void] = []
        var queued = false
    }

    private let byLoop = NIOLockedValueBox<[ObjectIdentifier: NIOLoopBound<OnLoop>]>([:])

    private func state(on loop: EventLoop) -> OnLoop {
        let key = ObjectIdentifier(loop)
        return byLoop.withLockedValue { all in
            if let bound = all[key] { return bound.value }
            let bound = NIOLoopBound(OnLoop(), eventLoop: loop)
            all[key] = bound
            return bound.value
        }
    }

    /// Registers a stream's write of its gathered answers; it runs at the next `flush(on:)` or in a task
    /// queued now, whichever comes first. Call on `loop`.
    func add(on loop: EventLoop, _ write: @escaping () -> Void) {
        let s = state(on: loop)
        s.writes.append(write)
        guard !s.queued else { return }
        s.queued = true
        let bound = NIOLoopBound(self, eventLoop: loop)
        loop.execute { bound.value.flush(on: loop) }
    }

    /// Writes every answer waiting on `loop` now. Call on `loop`.
    func flush(on loop: EventLoop) {
        let s = state(on: loop)
        s.queued = false
        guard !s.writes.isEmpty else { return }
        let writes = s.writes
        s.writes = []
        for write in writes { write() }
    }
}
