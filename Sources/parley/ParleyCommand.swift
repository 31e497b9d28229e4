import ArgumentParser
import Foundation

/// The one executable. Subcommands are registered here as their parts land.
@main
struct ParleyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Parley: a clustered chat-room server.",
        version: ParleyVersion.string,
        subcommands: [NodeCommand.self, DevCommand.self, StatusCommand.self, ClusterCommand.self, SimulateCommand.self, BenchCommand.self,
                      StorageCommand.self]
    )

    /// Swift's runtime takes the arguments in an ELF constructor, which a preloaded library (libfaketime, as
    /// ReplayWindowTests runs the nodes) can leave empty; then the kernel's copy is read instead.
    static func main() async {
        guard CommandLine.arguments.isEmpty, let raw = FileManager.default.contents(atPath: "/proc/self/cmdline") else {
            return await main(nil)
        }
        let words = raw.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        await main(Array(words.dropFirst().dropLast(words.last == "" ? 1 : 0)))
    }
}

enum ParleyVersion {
    static let string = "0.1.0"
}

/// `parley bench …`: benchmarks of each layer (never timed unit tests).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run a benchmark and print its figures.",
        subcommands: [BenchRoomsCommand.self, BenchRaftCommand.self, BenchReplicateCommand.self, BenchFanoutCommand.self, BenchFanoutMembersCommand.self, BenchClientCommand.self, BenchJoinCommand.self]
    )
}
