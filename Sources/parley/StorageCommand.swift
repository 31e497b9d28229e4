import ArgumentParser
import Foundation
import Synchronization
import ParleyStorage

/// `parley storage …`: tools for a node's database.
struct StorageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage",
        abstract: "Inspect and exercise a node's SQLite database.",
        subcommands: [Torture.self, Verify.self, History.self]
    )

    /// Prints a room's durable history from a stopped node's data folder, one JSON object per line: what the
    /// chaos checker compares across replicas (cluster/chaos/), and a forensic read for an operator.
    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a room's stored history (JSON lines: seq, kind, sender, clientMessageId, body) from a stopped node.")
        @Option(help: "The node's data folder (holding node.sqlite).") var data: String
        @Option(help: "The room id as the cluster keeps it: APP, U+001F, ROOM (\\u001f in JSON).") var room: String
        @Option(help: "Only items with seq above this.") var after: UInt64 = 0

        func run() throws {
            let database = try NodeDatabase(path: data + "/node.sqlite", durable: false)
            var cursor = after
            while true {
                let items = try database.history.since(roomId: room, afterSeq: cursor, belowSeq: .max, notBefore: 0,
                                                       limit: 1_000)
                guard let last = items.last else { break }
                var out = ""
                for item in items {
                    var line: [String: Any] = ["seq": item.seq]
                    switch item {
                    case .message(let m):
                        line["kind"] = "message"
                        line["sender"] = m.senderId
                        line["clientMessageId"] = m.clientMessageId
                        line["body"] = m.body
                    case .notification(let n):
                        line["kind"] = "notification"
                        line["type"] = Int(n.type.rawValue)
                    }
                    let json = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
                    out += String(decoding: json, as: UTF8.self) + "\n"
                }
                FileHandle.standardOutput.write(Data(out.utf8))
                cursor = last.seq
            }
        }
    }

    /// Writes Raft-shaped batches until killed, printing each durable batch; used to prove crash safety.
    struct Torture: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write batches forever (or --cycles), printing `durable G COMMIT LAST TERM` per group after each commit.")
        @Option(help: "Database file.") var data: String
        @Option(help: "Groups to write.") var groups = 8
        @Option(help: "Seed of the writer's choices.") var seed: UInt64 = 1
        @Option(help: "Stop after this many batches.") var cycles: Int?
        @Option(help: "Writers at once, each on its own thread with its share of the groups, over one database (as a node's Raft loops write it).")
        var writers = 1

        func run() throws {
            guard writers >= 1, writers <= groups else { throw ValidationError("--writers must be 1 … --groups") }
            let database = try NodeDatabase(path: data)
            // Each writer's batch report goes out whole: the reader takes a batch's lines up to its `batch`.
            let output = Mutex(())
            let failure = Mutex<String?>(nil)
            let done = DispatchGroup()
            for w in 0..<writers {
                done.enter()
                Thread { [groups, seed, cycles, writers] in
                    defer { done.leave() }
                    var torture = StorageTorture(database: database, groups: groups, seed: seed &+ UInt64(w) &* 7919,
                                                 writer: w, of: writers)
                    do {
                        try torture.run(cycles: cycles) { durable in
                            var out = ""
                            for d in durable { out += "durable \(d.group) \(d.commit) \(d.lastIndex) \(d.lastTerm)\n" }
                            out += "batch\n"
                            output.withLock { _ in FileHandle.standardOutput.write(Data(out.utf8)) }
                        }
                    } catch {
                        failure.withLock { $0 = $0 ?? "writer \(w): \(error)" }
                    }
                }.start()
            }
            done.wait()
            if let failed = failure.withLock({ $0 }) { throw ValidationError(failed) }
            // On stderr, so the reports on stdout stay what the crash test reads.
            FileHandle.standardError.write(Data("transactions \(database.transactionsWritten), of them joining several writers' batches \(database.joinedTransactions)\n".utf8))
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
