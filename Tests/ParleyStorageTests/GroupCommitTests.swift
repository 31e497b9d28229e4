import Foundation
import Testing
import ParleyRaft
@testable import ParleyStorage
import Synchronization
import ParleyRaftWire

/// Issue 35: a node's Raft loops commit through one `GroupCommit`: batches that arrive while another loop's
/// transaction is being written go together in the next one, and every caller returns only once its own
/// batch is written (or with that transaction's error).
@Suite struct GroupCommitTests {
    /// A batch holding one hard state for `group` (enough to tell batches apart).
    private func batch(_ group: GroupID) -> StorageBatch {
        var b = StorageBatch()
        b.update(group) { $0.hardState = HardState(term: group, vote: 0, commit: 0) }
        return b
    }

    @Test func batchesThatArriveDuringAWriteGoTogetherInTheNext() throws {
        let commit = GroupCommit()
        let firstWriting = DispatchSemaphore(value: 0), releaseFirst = DispatchSemaphore(value: 0)
        let written = Mutex<[[GroupID]]>([])
        let returned = Mutex<[GroupID]>([])
        let done = DispatchGroup()
        func committer(_ group: GroupID, blockFirst: Bool) {
            done.enter()
            Thread {
                defer { done.leave() }
                try? commit.commit(batch(group)) { b in
                    written.withLock { $0.append(b.writes.map(\.group)) }
                    if blockFirst { firstWriting.signal(); releaseFirst.wait() }
                }
                returned.withLock { $0.append(group) }
            }.start()
        }
        committer(1, blockFirst: true)
        firstWriting.wait()
        // Loops 2 and 3 arrive while loop 1's transaction is being written: they wait.
        committer(2, blockFirst: false)
        committer(3, blockFirst: false)
        let deadline = Date().addingTimeInterval(5)
        while commit.waitingCount < 2, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(commit.waitingCount == 2)
        #expect(returned.withLock { $0 }.isEmpty)
        releaseFirst.signal()
        done.wait()
        // One transaction for loop 1's batch, then one for 2's and 3's together; all three returned.
        #expect(written.withLock { $0 } == [[1], [2, 3]])
        #expect(Set(returned.withLock { $0 }) == [1, 2, 3])
        #expect(commit.joinedCount == 1)
    }

    @Test func aFailedTransactionFailsEveryBatchInIt() throws {
        struct DiskFull: Error {}
        let commit = GroupCommit()
        let firstWriting = DispatchSemaphore(value: 0), releaseFirst = DispatchSemaphore(value: 0)
        let failures = Mutex<[GroupID]>([])
        let done = DispatchGroup()
        func committer(_ group: GroupID, _ write: @escaping @Sendable (StorageBatch) throws -> Void) {
            done.enter()
            Thread {
                defer { done.leave() }
                do { try commit.commit(batch(group), write: write) } catch { failures.withLock { $0.append(group) } }
            }.start()
        }
        committer(1) { _ in firstWriting.signal(); releaseFirst.wait() }
        firstWriting.wait()
        committer(2) { b in if b.writes.count == 2 { throw DiskFull() } }
        committer(3) { b in if b.writes.count == 2 { throw DiskFull() } }
        let deadline = Date().addingTimeInterval(5)
        while commit.waitingCount < 2, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        releaseFirst.signal()
        done.wait()
        #expect(Set(failures.withLock { $0 }) == [2, 3])
    }

    /// On a real database: four threads, each with its own groups, commit at once; every entry reads back
    /// after the database is opened again.
    @Test func fourLoopsCommittingAtOnceLoseNothing() throws {
        let path = try temporaryDatabasePath("loops")
        let writers = 4
        let done = DispatchGroup()
        let failure = Mutex<String?>(nil)
        let database = try NodeDatabase(path: path)
        var last: [GroupID: StorageTorture.Durable] = [:]
        let reports = Mutex<[GroupID: StorageTorture.Durable]>([:])
        for w in 0..<writers {
            done.enter()
            Thread {
                defer { done.leave() }
                var torture = StorageTorture(database: database, groups: 8, seed: UInt64(w + 1), writer: w, of: writers)
                do {
                    try torture.run(cycles: 150) { durable in reports.withLock { r in for d in durable { r[d.group] = d } } }
                } catch {
                    failure.withLock { $0 = "writer \(w): \(error)" }
                }
            }.start()
        }
        done.wait()
        #expect(failure.withLock { $0 } == nil)
        last = reports.withLock { $0 }
        #expect(last.count == 8)
        #expect(try StorageTorture.verify(database: try NodeDatabase(path: path), lastReported: last).isEmpty)
    }
}
