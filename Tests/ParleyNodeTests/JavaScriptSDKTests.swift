import Foundation
import ParleyTestSupport
import Testing

/// Issue 37: the JavaScript SDK's offline tests (Node's own test runner: the ledger, the frames, the reconnect,
/// hand-off, heartbeat and back-off rules against a protocol test peer, the protocol coverage, the TypeScript
/// declarations) run with the rest, so `cluster/test.sh` covers them. The browser suite against a real cluster
/// is `Tests/ParleyJSTests/browser/`, run by .ci/run.
@Suite struct JavaScriptSDKTests {
    static let node = ["/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let unitTests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ParleyJSTests/unit").path

    @Test(.enabled(if: node != nil, "node is not installed (`apt-get install -y nodejs`; cluster/test-tools.sh installs it)"))
    func theSDKsOfflineTestsPass() async throws {
        let (status, text) = try await runTool("/usr/bin/timeout", ["-k", "5", "240", Self.node!, "--test", Self.unitTests + "/"])
        #expect(status == 0, "node --test Tests/ParleyJSTests/unit/ failed:\n\(text.suffix(4000))")
        // Every suite ran: a file that failed to load would not be counted as a pass.
        let passed = text.split(separator: "\n").first { $0.hasPrefix("# pass ") }.flatMap { Int($0.dropFirst(7)) } ?? 0
        #expect(passed >= 19, "only \(passed) JavaScript tests passed:\n\(text.suffix(2000))")
    }
}
