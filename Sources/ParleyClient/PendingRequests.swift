import Foundation

/// Requests sent and not answered yet, by request id. A slot exists from before the frame is written, so an
/// answer that arrives before the sender starts waiting is kept instead of lost.
struct PendingRequests {
    private enum Slot {
        case sent(link: Int)
        case waiting(link: Int, CheckedContinuation<Data, any Error>, timeout: Task<Void, Never>)
        case answered(Result<Data, ChatroomError>)
    }

    private var slots: [Int: Slot] = [:]
    private var lastId = 0

    var count: Int { slots.count }

    /// A fresh id, from 1 up: 0 is the server's "no id could be read" (docs/protocol.md).
    mutating func open(link: Int) -> Int {
        lastId += 1
        slots[lastId] = .sent(link: link)
        return lastId
    }

    /// Parks the caller until the answer, an error or the timeout; resumes at once if the answer is in.
    mutating func wait(_ id: Int, _ continuation: CheckedContinuation<Data, any Error>, timeout: Task<Void, Never>) {
        switch slots[id] {
        case .sent(let link):
            slots[id] = .waiting(link: link, continuation, timeout: timeout)
        case .answered(let result):
            slots[id] = nil
            timeout.cancel()
            continuation.resume(with: result.mapError { $0 })
        case .waiting, nil:
            timeout.cancel()
            continuation.resume(throwing: ChatroomError.lost("request \(id) is not pending"))
        }
    }

    /// Hands an answer (or a local failure) to request `id`; unknown ids (answered already, timed out) are
    /// ignored.
    mutating func resolve(_ id: Int, _ result: Result<Data, ChatroomError>) {
        switch slots[id] {
        case .sent:
            slots[id] = .answered(result)
        case .waiting(_, let continuation, let timeout):
            slots[id] = nil
            timeout.cancel()
            continuation.resume(with: result.mapError { $0 })
        case .answered, nil:
            break
        }
    }

    /// Fails every request that went out on `link` (it closed: no answer will come).
    mutating func fail(link: Int, _ error: ChatroomError) {
        for (id, slot) in slots {
            switch slot {
            case .sent(let l) where l == link: resolve(id, .failure(error))
            case .waiting(let l, _, _) where l == link: resolve(id, .failure(error))
            default: break
            }
        }
    }

    /// Forgets a request that never went out or whose answer nobody will collect.
    mutating func drop(_ id: Int) {
        if case .waiting(_, let continuation, let timeout) = slots[id] {
            timeout.cancel()
            continuation.resume(throwing: ChatroomError.lost("request \(id) dropped"))
        }
        slots[id] = nil
    }
}
