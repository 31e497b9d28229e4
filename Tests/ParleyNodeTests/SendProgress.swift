import Foundation

/// What a test's sender has had acknowledged so far, shared with the test that drives the fault: a fault is
/// triggered when enough messages went through (a condition, with a generous deadline), never after a fixed
/// time, so a slow or loaded machine changes how long a test takes, not what it asserts (issue 32).
actor SendProgress {
    private(set) var acked: [Int64] = []
    private(set) var stopped = false

    func record(_ seq: Int64) { acked.append(seq) }
    func stop() { stopped = true }
    var count: Int { acked.count }

    /// Waits until at least `count` sends were acknowledged; throws after `seconds` with what was reached.
    func waitFor(count: Int, _ what: String, seconds: Double = 120) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while acked.count < count {
            guard Date() < deadline else {
                throw LocalClusterError.failed("timed out waiting for \(what): \(acked.count) of \(count) acknowledged")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
