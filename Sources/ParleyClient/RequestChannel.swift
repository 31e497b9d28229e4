import Foundation

/// What both clients do to ask the server something over a link (docs/protocol.md, "Requests, answers,
/// events"): number the request, write its frame, and wait for the answer with that id — or a timeout, or the
/// link's closing. `ChatroomClient` and `IMClient` each keep their own `pending` table.
protocol RequestChannel: Actor {
    var pending: PendingRequests { get set }
    var requestTimeout: Duration { get }
}

extension RequestChannel {
    /// Sends `request` on `link` and returns the raw answer frame; throws `ChatroomError` (408 on timeout).
    func send(_ request: ChatroomRequest, on link: WebSocketLink) async throws -> Data {
        let id = pending.open(link: link.id)
        do {
            try await link.send(request.frame(id: id))
        } catch {
            pending.drop(id)
            throw error
        }
        let timeout = requestTimeout
        return try await withCheckedThrowingContinuation { continuation in
            let timer = Task { [weak self] in
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                await self?.resolve(id, .failure(ChatroomError(code: ChatroomError.timeout, message: "no answer to \(request.op) in \(timeout)")))
            }
            pending.wait(id, continuation, timeout: timer)
        }
    }

    func resolve(_ id: Int, _ result: Result<Data, ChatroomError>) {
        pending.resolve(id, result)
    }
}
