import Foundation

/// Runs Debian's `chromium` headless to render a page, as a browser would, and returns the DOM.
enum HeadlessChromium {
    static let executable: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    enum Failure: Error { case missing, exited(Int32, String) }

    /// Loads `url`, lets its scripts run for `virtualMilliseconds` of virtual time (timers and fetches),
    /// then dumps the DOM. Bounded by `timeout` seconds of real time (`timeout(1)` kills it).
    static func dumpDOM(url: String, virtualMilliseconds: Int, timeout: Int = 60) throws -> String {
        guard let executable else { throw Failure.missing }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("parley-chromium-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: profile) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        p.arguments = ["-k", "5", "\(timeout)", executable, "--headless", "--no-sandbox", "--disable-gpu",
                       "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=\(profile.path)",
                       "--virtual-time-budget=\(virtualMilliseconds)", "--dump-dom", url]
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Drain stderr on another thread so a chatty browser cannot block on a full pipe.
        let errors = ErrorText()
        let drained = DispatchSemaphore(value: 0)
        let drain = Thread {
            errors.set(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
            drained.signal()
        }
        drain.start()
        let dom = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        drained.wait()
        guard p.terminationStatus == 0 else { throw Failure.exited(p.terminationStatus, String(errors.get().suffix(2000))) }
        return dom
    }

    /// `dumpDOM` on a thread of its own, not the two-thread cooperative pool the test's other tasks need.
    static func renderedDOM(url: String, virtualMilliseconds: Int) async throws -> String {
        try await withCheckedThrowingContinuation { done in
            Thread.detachNewThread {
                do { done.resume(returning: try dumpDOM(url: url, virtualMilliseconds: virtualMilliseconds)) } catch {
                    done.resume(throwing: error)
                }
            }
        }
    }

    /// Capture groups of every match of `pattern`.
    static func matches(_ pattern: String, in text: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern)
        let ns = text as NSString
        return regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { m in
            (1..<m.numberOfRanges).map { ns.substring(with: m.range(at: $0)) }
        }
    }

    private final class ErrorText: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        func set(_ value: String) { lock.withLock { text = value } }
        func get() -> String { lock.withLock { text } }
    }
}
