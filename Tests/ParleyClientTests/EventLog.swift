import Foundation
import ParleyClient

/// Collects a client's events so a test can wait for one and look at the order they came in.
actor EventLog {
    private(set) var events: [ChatroomEvent] = []

    init(_ client: ChatroomClient) {
        let stream = client.events
        Task { await self.read(stream) }
    }

    private func read(_ stream: AsyncStream<ChatroomEvent>) async {
        for await event in stream { events.append(event) }
    }

    struct Timeout: Error, CustomStringConvertible {
        let what: String
        let seen: [ChatroomEvent]
        var description: String { "timed out waiting for \(what); events: \(seen)" }
    }

    /// Waits until `check` holds for the events so far (polling; the tests' time scale is 10 ms).
    func until(_ what: String, seconds: Double = 10, _ check: ([ChatroomEvent]) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if check(events) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw Timeout(what: what, seen: events)
    }

    func states(_ roomId: String) -> [ConnectionState] {
        events.compactMap { if case .connectionState(roomId, let s) = $0 { s } else { nil } }
    }

    func messageSeqs(_ roomId: String) -> [Int64] {
        events.compactMap { if case .message(roomId, let m) = $0 { m.seq } else { nil } }
    }

    func messageBodies(_ roomId: String) -> [String] {
        events.compactMap { if case .message(roomId, let m) = $0 { m.body } else { nil } }
    }
}
