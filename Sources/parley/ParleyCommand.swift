import ArgumentParser

/// The one executable. Subcommands are registered here as their parts land.
@main
struct ParleyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Parley: a clustered chat-room server.",
        version: ParleyVersion.string,
        subcommands: [NodeCommand.self, DevCommand.self, StatusCommand.self, SimulateCommand.self, BenchCommand.self,
                      StorageCommand.self]
    )
}

enum ParleyVersion {
    static let string = "0.1.0"
}

/// `parley bench …`: benchmarks of each layer (never timed unit tests).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run a benchmark and print its figures.",
        subcommands: [BenchRoomsCommand.self, BenchRaftCommand.self, BenchReplicateCommand.self, BenchFanoutCommand.self]
    )
}
