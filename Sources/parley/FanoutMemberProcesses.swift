import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import NIOConcurrencyHelpers
import Synchronization

/// Members of `bench fanout`'s room connected from processes of their own (`--member-processes`): one process
/// holds at most what its descriptor limit allows (20,000 here, a hard limit), and a 50,000-member room needs
/// more. Each child (`parley bench fanout-members`) connects its share, says `entered`, then reports what its
/// members received every 250 ms, and its latency samples once its stdin closes.
final class FanoutMemberProcesses: @unchecked Sendable {
    struct Report: Sendable {
        var entered = false
        var delivered = 0
        var high = 0
        var last: UInt64 = 0
        var samples: [Double]?
        /// Members that had to enter again (their connection failed while entering).
        var retries = 0
    }

    private let children: [Process]
    private let inputs: [Pipe]
    private let reports: NIOLockedValueBox<[Report]>

    /// Starts `counts.count` children, child `i` holding `counts[i]` members numbered from `offsets[i]`.
    init(counts: [Int], offsets: [Int], ports: [Int], room: String, app: String, heartbeatSeconds: Int = 0,
         connectWindow: Int = 200) throws {
        let executable = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let reports = NIOLockedValueBox([Report](repeating: Report(), count: counts.count))
        var children: [Process] = []
        var inputs: [Pipe] = []
        for (i, count) in counts.enumerated() {
            let p = Process()
            p.executableURL = executable
            p.arguments = ["bench", "fanout-members", "--ports", ports.map(String.init).joined(separator: ","),
                           "--room", room, "--app", app, "--count", "\(count)", "--offset", "\(offsets[i])",
                           "--heartbeat-seconds", "\(heartbeatSeconds)", "--connect-window", "\(connectWindow)"]
            let output = Pipe(), input = Pipe()
            p.standardOutput = output
            p.standardInput = input
            p.standardError = FileHandle.nullDevice
            try p.run()
            children.append(p)
            inputs.append(input)
            let handle = output.fileHandleForReading
            Thread.detachNewThread {
                var buffer = Data()
                while case let chunk = handle.availableData, !chunk.isEmpty {
                    buffer += chunk
                    while let newline = buffer.firstIndex(of: 10) {
                        let line = buffer[buffer.startIndex..<newline]
                        buffer.removeSubrange(buffer.startIndex...newline)
                        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else { continue }
                        reports.withLockedValue { all in
                            if object["entered"] != nil { all[i].entered = true }
                            if let r = object["retries"] as? Int { all[i].retries = r }
                            if let d = object["delivered"] as? Int { all[i].delivered = d }
                            if let h = object["high"] as? Int { all[i].high = h }
                            if let l = object["last"] as? UInt64 { all[i].last = l } else if let l = object["last"] as? Int { all[i].last = UInt64(l) }
                            if let s = object["samples"] as? [Double] { all[i].samples = s }
                        }
                    }
                }
            }
        }
        self.children = children
        self.inputs = inputs
        self.reports = reports
    }

    /// Waits until every child's members have entered (at most `seconds`).
    func waitEntered(seconds: Double) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !reports.withLockedValue({ $0.allSatisfy(\.entered) }) {
            guard Date() < deadline, children.allSatisfy(\.isRunning) else {
                throw ValidationError("a member process did not enter its members")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Members of the children that had to enter again.
    var retries: Int { reports.withLockedValue { $0.reduce(0) { $0 + $1.retries } } }

    /// What every child's members received so far.
    var total: (delivered: Int, high: Int, last: UInt64) {
        reports.withLockedValue { all in
            (all.reduce(0) { $0 + $1.delivered }, all.reduce(0) { $0 + $1.high }, all.map(\.last).max() ?? 0)
        }
    }

    /// Ends the children: their last report carries their latency samples.
    func finish() async -> [Double] {
        for input in inputs { try? input.fileHandleForWriting.close() }
        let deadline = Date().addingTimeInterval(30)
        while children.contains(where: \.isRunning), Date() < deadline { try? await Task.sleep(for: .milliseconds(100)) }
        for child in children where child.isRunning { child.terminate() }
        return reports.withLockedValue { $0.flatMap { $0.samples ?? [] } }
    }
}

/// `parley bench fanout-members`: the child side of `FanoutMemberProcesses`.
struct BenchFanoutMembersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout-members",
        abstract: "Members of `bench fanout --member-processes`: enters them, reports what they receive until stdin closes.")

    @Option var ports: String
    @Option var room: String
    @Option var app: String
    @Option var count: Int
    @Option var offset = 0
    @Option(name: .customLong("heartbeat-seconds")) var heartbeatSeconds = 0
    @Option(name: .customLong("connect-window")) var connectWindow = 200

    /// One report line, written at once (the parent reads them as they come).
    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func run() async throws {
        let ports = self.ports.split(separator: ",").compactMap { Int($0) }
        guard !ports.isEmpty, count > 0 else { throw ValidationError("bad --ports or --count") }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let tally = FanoutTally()
        let channels = try await FanoutConnection.enterMembers(
            Array(offset..<(offset + count)), room: room, app: app, ports: ports, group: group, tally: tally,
            window: connectWindow, heartbeat: heartbeatSeconds > 0 ? .seconds(Int64(heartbeatSeconds)) : nil)
        Self.say(#"{"entered":\#(channels.count),"retries":\#(tally.retries.count)}"#)
        let ended = Mutex(false)
        Thread.detachNewThread {
            _ = FileHandle.standardInput.readDataToEndOfFile()
            ended.withLock { $0 = true }
        }
        while !ended.withLock({ $0 }) {
            let s = tally.snapshot
            Self.say(#"{"delivered":\#(s.delivered),"high":\#(tally.high),"last":\#(s.last)}"#)
            try await Task.sleep(for: .milliseconds(250))
        }
        let s = tally.snapshot
        let samples = s.samples.map { String(format: "%.3f", $0) }.joined(separator: ",")
        Self.say(#"{"delivered":\#(s.delivered),"high":\#(tally.high),"last":\#(s.last),"samples":[\#(samples)]}"#)
        for c in channels { c.close(promise: nil) }
        try? await group.shutdownGracefully()
    }
}
