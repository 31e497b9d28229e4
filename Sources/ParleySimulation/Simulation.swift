/// A deterministic simulation of a ParleyRaft cluster: one seed fully determines the run
/// (network faults, crashes, membership changes, client workload), so any failure replays exactly.
public struct Simulation: Sendable {
    public var seed: UInt64
    public var config: SimulationConfig

    public init(seed: UInt64, config: SimulationConfig = SimulationConfig()) {
        self.seed = seed
        self.config = config
    }

    /// Runs the fault phase, then the quiet period, then checks the client history.
    public func run() -> SimulationReport {
        SimulationRun(seed: seed, config: config).run()
    }

    /// The one-line command that replays `seed` (`steps`: only when not the command's default).
    public static func reproduceCommand(seed: UInt64, nodes: Int, steps: Int?) -> String {
        var command = "swift run parley simulate --seed \(seed)"
        if nodes != 3 { command += " --nodes \(nodes)" }
        if let steps { command += " --steps \(steps)" }
        return command
    }
}
