import NIOCore
import ParleyRooms
import ParleyStorage

/// Runs history reads for a host's replicas: on the history database's thread with the answer handed back to
/// the host's loop when the host runs on one (a node), on the caller's thread when it does not (tests that
/// drive a host directly).
package final class HistoryPages {
    /// The loop the host runs on; answers come back there.
    package var loop: EventLoop?
    private let database: NodeDatabase

    init(database: NodeDatabase) {
        self.database = database
    }

    /// Finishes a read with `complete` and calls `deliver` with the answer (`fallback` if the store fails). The
    /// rows applied but not yet handed to the store go first (`writeWaitingRows`, on the caller's thread: a
    /// hand-over, not a write), so the read, queued behind them, sees every row that left a window.
    func finish<Answer: Sendable>(_ complete: @escaping @Sendable (HistoryReader) throws -> Answer, fallback: Answer,
                                  writeWaitingRows: () throws -> Void, deliver: @escaping (Answer) -> Void) {
        do { try writeWaitingRows() } catch { return deliver(fallback) }
        guard let loop else {
            return deliver((try? database.history.readNow { try complete($0) }) ?? fallback)
        }
        let answer = NIOLoopBound(deliver, eventLoop: loop)
        database.history.readLater({ try complete($0) }) { result in
            let outcome = (try? result.get()) ?? fallback
            loop.execute { answer.value(outcome) }
        }
    }
}
