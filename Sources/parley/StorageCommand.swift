import ArgumentParser
import Foundation
import ParleyStorage

/// `parley storage …`: tools for a node's database.
struct StorageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage",
        abstract: "Inspect and exercise a node's SQLite database.",
        subcommands: [Torture.self, Verify.self]
    )

    /// Writes Raft-shaped batches until killed, printing each durable batch; used to prove crash safety.
    struct Torture: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write batches forever (or --cycles), printing `durable G COMMIT LAST TERM` per group after each commit.")
        @Option(help: "Database file.") var data: String
        @Option(help: "Groups to write.") var groups = 8
        @Option(help: "Seed of the writer's choices.") var seed: UInt64 = 1
        @Option(help: "Stop after this many batches.") var cycles: Int?

        func run() throws {
            var torture = StorageTorture(database: try NodeDatabase(path: data), groups: groups, seed: seed)
            try torture.run(cycles: cycles) { durable in
                var out = ""
                for d in durable { out += "durable \(d.group) \(d.commit) \(d.lastIndex) \(d.lastTerm)\n" }
                out += "batch\n"
                FileHandle.standardOutput.write(Data(out.utf8))
            }
        }
    }

    /// Opens every group and checks each log is whole and holds the torture writer's bytes.
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a database written by `storage torture`.")
        @Option(help: "Database file.") var data: String

        func run() throws {
            let problems = try StorageTorture.verify(database: try NodeDatabase(path: data), lastReported: [:])
            problems.forEach { print($0) }
            print(problems.isEmpty ? "ok" : "\(problems.count) problems")
            if !problems.isEmpty { throw ExitCode.failure }
        }
    }
}
