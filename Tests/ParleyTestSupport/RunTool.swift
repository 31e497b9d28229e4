import Foundation

/// Runs `body` on a thread of its own and awaits it. The test process's cooperative pool has one thread per core
/// (two here) and every suite's tasks share it: a test that blocks a pool thread (waiting on a child process, a
/// pipe or a semaphore) for tens of seconds stalls every other test meanwhile — servers that cannot start, timers
/// that do not fire — as a CI run did when two such tests blocked both threads for 47 s.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { done in
        Thread.detachNewThread { done.resume(with: Result { try body() }) }
    }
}

/// Runs a command-line tool to the end, off the cooperative pool; returns its exit status and what it wrote
/// (stdout and stderr).
public func runTool(_ path: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    try await offThePool { try runToolBlocking(path, arguments) }
}

/// `runTool` on the calling thread: only for tools that finish in milliseconds (openssl making a key) where the
/// caller cannot await.
public func runToolBlocking(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}
