import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import ParleyCluster
import ParleyRaft
import ParleyRaftWire

/// Issue 17: snapshot chunks leave at most at the configured bytes per second; nothing else waits.
@Suite struct SnapshotPacerTests {
    private static func chunk(group: UInt64, offset: UInt64, bytes: Int, total: UInt64) -> RaftEnvelope {
        RaftEnvelope(group: group, message: Message(kind: .snapshot, from: 1, to: 2, term: 1,
                                                    snapshot: Snapshot(metadata: SnapshotMetadata(index: 10, term: 1, confState: ConfState(voters: [1])),
                                                                       data: [UInt8](repeating: 7, count: bytes)),
                                                    snapshotOffset: offset, snapshotTotalBytes: total))
    }

    private final class Deliveries: @unchecked Sendable {
        let lock = NIOLock()
        var items: [(at: ContinuousClock.Instant, envelope: RaftEnvelope)] = []
        func add(_ batch: [RaftEnvelope]) { lock.withLock { for e in batch { items.append((.now, e)) } } }
        var all: [(at: ContinuousClock.Instant, envelope: RaftEnvelope)] { lock.withLock { items } }
    }

    @Test func chunksBeyondTheCapWaitAndLeaveInOrderWhileHeartbeatsPass() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let delivered = Deliveries()
        let rate = 1 << 20  // 1 MiB/s; the bucket holds a quarter second (256 KiB)
        let pacer = try await loop.submit {
            SnapshotPacer(bytesPerSecond: rate, loop: loop) { _, batch in delivered.add(batch) }
        }.get()
        let piece = 128 << 10, count = 8  // 1 MiB in 128 KiB chunks
        let started = ContinuousClock.now
        // What left at once is read in the same loop task as the sends: the pacer's timers run on this loop, so
        // on a loaded machine a later read could see chunks the cap released since (a flaky check once).
        let first = try await loop.submit {
            let chunks = (0..<count).map { Self.chunk(group: 5, offset: UInt64($0 * piece), bytes: piece, total: UInt64(count * piece)) }
            pacer.send(2, chunks)
            // The same chunks again (the leader resending): nothing is queued twice.
            pacer.send(2, chunks)
            pacer.send(2, [RaftEnvelope(group: 6, message: Message(kind: .heartbeat, from: 1, to: 2, term: 1))])
            return delivered.all
        }.get()
        #expect(first.contains { $0.envelope.message.kind == .heartbeat }, "a heartbeat never waits for snapshot bytes")
        #expect(first.filter { $0.envelope.message.kind == .snapshot }.count < count, "the cap held chunks back")
        let deadline = ContinuousClock.now + .seconds(20)
        while delivered.all.filter({ $0.envelope.message.kind == .snapshot }).count < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let chunks = delivered.all.filter { $0.envelope.message.kind == .snapshot }
        #expect(chunks.map(\.envelope.message.snapshotOffset) == (0..<count).map { UInt64($0 * piece) }, "every chunk once, in order")
        // The last chunk cannot leave before the bytes beyond the bucket were earned at the rate: (1 MiB -
        // 256 KiB - one chunk of debt) ÷ 1 MiB/s. A slow machine only makes it later.
        let elapsed = chunks.last!.at - started
        #expect(elapsed >= .milliseconds(560), "1 MiB went out in \(elapsed) at a 1 MiB/s cap")
        let waited = try await loop.submit { pacer.delayedChunks }.get()
        #expect(waited > 0)
    }

    @Test func noCapSendsEverythingAtOnce() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let delivered = Deliveries()
        try await loop.submit {
            let pacer = SnapshotPacer(bytesPerSecond: 0, loop: loop) { _, batch in delivered.add(batch) }
            pacer.send(2, (0..<16).map { Self.chunk(group: 5, offset: UInt64($0 << 20), bytes: 1 << 20, total: 16 << 20) })
        }.get()
        #expect(delivered.all.count == 16)
    }
}
