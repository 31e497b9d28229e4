import ArgumentParser
import ParleySimulation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `parley simulate …`: deterministic simulation of a ParleyRaft cluster under faults, seed by seed.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run seeded fault simulations of the Raft core and check safety, liveness and linearizability.",
        discussion: """
            Each seed fully determines a run. A failure prints the seed, the broken invariant and one command \
            that replays it; the exit status is then non-zero. `--seed N` replays one seed with a trace.
            """
    )

    @Option(help: "How many consecutive seeds to run.")
    var seeds = 100

    @Option(help: "First seed of the range.")
    var from: UInt64 = 1

    @Option(help: "Run only this seed, printing its trace.")
    var seed: UInt64?

    @Option(help: "Founding voters (3 or 5).")
    var nodes = 3

    @Option(help: "Events in each run's fault phase (default \(SimulateCommand.defaultSteps)).")
    var steps: Int?

    @Flag(help: "Print one line per seed (or, with --seed, the trace even when it passes).")
    var verbose = false

    @Flag(help: "With --seed: also trace every delivered message.")
    var messages = false

    static let defaultSteps = 4_000

    func validate() throws {
        guard nodes == 3 || nodes == 5 else { throw ValidationError("--nodes must be 3 or 5") }
        guard seeds > 0 else { throw ValidationError("--seeds must be positive") }
    }

    private var config: SimulationConfig {
        var config = SimulationConfig()
        config.nodes = nodes
        config.steps = steps ?? Self.defaultSteps
        return config
    }

    private func reproduce(_ seed: UInt64) -> String {
        Simulation.reproduceCommand(seed: seed, nodes: nodes, steps: steps)
    }

    func run() throws {
        if let seed {
            try runOne(seed)
        } else {
            try runMany()
        }
    }

    /// If the Raft core traps (a failed precondition), the process dies inside a seed: say which one, and
    /// how to replay it, from the signal handler (only `write` and `_exit`, which are safe there).
    private func announce(_ seed: UInt64) {
        CrashNotice.set("\nparley simulate: crashed in seed \(seed)\nreproduce: \(reproduce(seed))\n")
    }

    private func runOne(_ seed: UInt64) throws {
        CrashNotice.install()
        announce(seed)
        var config = self.config
        config.trace = true
        config.traceMessages = messages
        let report = Simulation(seed: seed, config: config).run()
        if verbose || !report.passed {
            for line in report.trace { print(line) }
        }
        print("seed \(seed): \(report.steps) steps, \(report.virtualTime) virtual ms; \(report.statistics.summary)")
        if let verdict = report.linearizability { print("history: \(verdict.explanation)") }
        if let violation = report.violation {
            print("FAILED seed \(seed): \(violation)")
            print("reproduce: \(reproduce(seed))")
            throw ExitCode(1)
        }
        print("passed")
    }

    private func runMany() throws {
        let clock = ContinuousClock()
        let started = clock.now
        var failures: [UInt64] = []
        var undecided: [UInt64] = []
        var totals = SimulationStatistics()
        var virtualTime: UInt64 = 0
        CrashNotice.install()
        for seed in from..<(from + UInt64(seeds)) {
            announce(seed)
            let report = Simulation(seed: seed, config: config).run()
            totals.add(report.statistics)
            virtualTime += report.virtualTime
            if case .unknown = report.linearizability { undecided.append(seed) }
            if verbose {
                print("seed \(seed): \(report.passed ? "ok" : "FAILED") \(report.virtualTime) ms; \(report.statistics.summary)")
            }
            if let violation = report.violation {
                failures.append(seed)
                print("FAILED seed \(seed): \(violation)")
                print("reproduce: \(reproduce(seed))")
            }
        }
        let elapsed = clock.now - started
        print("\(seeds) seeds (\(from)...\(from + UInt64(seeds) - 1)), \(nodes) nodes, "
            + "\(config.steps) steps each: \(seeds - failures.count) passed, \(failures.count) failed; "
            + "\(virtualTime / 1000) virtual s in \(elapsed)")
        print("totals: \(totals.summary)")
        if !undecided.isEmpty { print("checker gave up (unknown, not failures) on seeds \(undecided)") }
        if !failures.isEmpty {
            print("failed seeds: \(failures.map(String.init).joined(separator: " "))")
            throw ExitCode(1)
        }
    }
}

/// A preformatted message for the trap handler (a handler may not allocate or format).
enum CrashNotice {
    private static let capacity = 512
    nonisolated(unsafe) private static let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    nonisolated(unsafe) private static var length = 0

    static func set(_ text: String) {
        let bytes = Array(text.utf8.prefix(capacity))
        length = 0
        bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: bytes.count) }
        length = bytes.count
    }

    static func install() {
        for number in [SIGILL, SIGTRAP, SIGABRT, SIGSEGV] {
            _ = signal(number) { _ in
                _ = write(2, CrashNotice.buffer, CrashNotice.length)
                _exit(70)
            }
        }
    }
}
