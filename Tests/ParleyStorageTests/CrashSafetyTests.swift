import Foundation
import Testing
import ParleyRaft
@testable import ParleyStorage
import ParleyNode
import ParleyRaftWire
import ParleyTestSupport

@Suite struct CrashSafetyTests {
    /// A writer killed with SIGKILL at an arbitrary moment loses nothing it reported durable and never
    /// leaves a torn log; the next writer carries on from what is on disk, and is killed in turn. With two
    /// writers on two threads over one database, as a node's Raft loops write it (issue 35): their row
    /// numbers interleave, and each one's deletion of the rows no group needs runs beside the other's writes.
    @Test(arguments: [1, 2]) func killMinusNineLosesNothingReportedDurable(writers: Int) async throws {
        let path = try temporaryDatabasePath("crash")
        let parley = try LocalNodeProcesses.parleyExecutable()
        var lastReported: [GroupID: StorageTorture.Durable] = [:]
        for round in 1...4 {
            let killAfter = (20 + round * 17) * writers
            // Reading the writer's pipe blocks: on a thread of its own, not the test process's cooperative pool.
            let reported = lastReported
            let run = try await offThePool {
                try Self.tortureUntilKilled(parley, path: path, round: round, writers: writers, batches: killAfter,
                                            lastReported: reported)
            }
            lastReported = run.lastReported
            #expect(run.batches >= killAfter, "the writer stopped early in round \(round)")
            #expect(run.killed, "round \(round): the writer was not ended by SIGKILL")

            let problems = try StorageTorture.verify(database: try NodeDatabase(path: path), lastReported: lastReported)
            #expect(problems.isEmpty, "round \(round): \(problems)")
        }
        #expect(lastReported.count == 6)
    }

    /// Runs `parley storage torture` until it has reported `batches` durable batches (or died), then kills it
    /// with SIGKILL. Returns what it reported durable, merged over `lastReported`.
    private static func tortureUntilKilled(_ parley: URL, path: String, round: Int, writers: Int, batches killAfter: Int,
                                           lastReported: [GroupID: StorageTorture.Durable]) throws
        -> (lastReported: [GroupID: StorageTorture.Durable], batches: Int, killed: Bool) {
        var lastReported = lastReported
        let process = Process()
        process.executableURL = parley
        process.arguments = ["storage", "torture", "--data", path, "--groups", "6", "--seed", "\(round)",
                             "--writers", "\(writers)"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var buffer = ""
        var pendingBatch: [StorageTorture.Durable] = []
        var batches = 0
        while batches < killAfter {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }  // the writer died on its own: the test fails
            buffer += String(decoding: chunk, as: UTF8.self)
            while let newline = buffer.firstIndex(of: "\n") {
                let line = buffer[..<newline]
                buffer.removeSubrange(...newline)
                let fields = line.split(separator: " ")
                if fields.first == "durable", fields.count == 5 {
                    pendingBatch.append(StorageTorture.Durable(
                        group: GroupID(fields[1])!, commit: LogIndex(fields[2])!,
                        lastIndex: LogIndex(fields[3])!, lastTerm: Term(fields[4])!))
                } else if line == "batch" {
                    for d in pendingBatch { lastReported[d.group] = d }
                    pendingBatch = []
                    batches += 1
                }
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return (lastReported, batches, process.terminationReason == .uncaughtSignal)
    }

    @Test func verifyNoticesALostCommit() throws {
        let path = try temporaryDatabasePath()
        var torture = StorageTorture(database: try NodeDatabase(path: path), groups: 2, seed: 5)
        var last: [GroupID: StorageTorture.Durable] = [:]
        try torture.run(cycles: 30) { batch in for d in batch { last[d.group] = d } }
        #expect(try StorageTorture.verify(database: torture.database, lastReported: last).isEmpty)
        // Claim more was durable than was: verify must object.
        var inflated = last
        inflated[1]!.commit += 1000
        let problems = try StorageTorture.verify(database: torture.database, lastReported: inflated)
        #expect(problems.count == 2)
    }
}
