import Foundation
import Testing
import ParleyCluster
import ParleyRooms
import ParleyPlacement

/// Steady message traffic over the peer port while a test changes the cluster (leaders move, nodes join):
/// one member ("ann", on the stand-in edge "it-edge") sends to each room in turn through whichever nodes
/// run, each message with its own clientMessageId and retried with it until acknowledged, as a client does.
final class MessageLoad: @unchecked Sendable {
    struct Result {
        var acked: [String: Set<String>] = [:]
        var failed: [String] = []
        var retries = 0
        var reentered = 0
        var sent: Int { acked.values.reduce(0) { $0 + $1.count } }
    }

    static let member = CommandActor.session(SessionIdentity(userId: "ann", sessionId: "ann#1", edgeId: "it-edge"))

    private let lock = NSLock()
    private var stopped = false
    private var ackedCount = 0
    private var task: Task<Result, Never>?

    /// Creates each room, enters "ann" and lifts the send budget.
    static func prepare(_ cluster: LocalCluster, rooms: [String]) async throws {
        for room in rooms {
            // Retried while leaders move (the balancer may be at work): a retry that finds the room made is fine.
            let made = try await cluster.submitRetrying(.createRoom(CreateRoom(roomId: room, creator: "ann", name: room)),
                                                        room: room, via: 1)
            guard made.errorCode == nil || made.errorCode == .alreadyInState else {
                throw LocalClusterError.failed("createRoom \(room): \(made.result)")
            }
            _ = try await cluster.submitRetrying(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room, as: member, via: 2)
        }
        try await cluster.unlimitedSends(app: "")
    }

    /// One room on each of `count` different shards.
    static func rooms(_ count: Int, prefix: String, shards: Int) -> [String] {
        let map = ShardMap(shardCount: shards)
        var rooms: [String] = []
        var taken = Set<Int>()
        var n = 0
        while rooms.count < count {
            let room = "\(prefix)-\(n)"
            n += 1
            if taken.insert(map.shard(ofRoom: room)).inserted { rooms.append(room) }
        }
        return rooms
    }

    func start(_ cluster: LocalCluster, rooms: [String], attempts: Int = 40) {
        task = Task {
            var result = Result()
            var i = 0
            while !self.isStopped {
                let room = rooms[i % rooms.count]
                let id = "m-\(i)"
                var done = false
                var lastError = ""
                for attempt in 0..<attempts where !done && !self.isStopped {
                    let running = cluster.running.sorted()
                    // No node runs: the test ended (a failure threw past `stop()`) and its cluster stopped.
                    guard !running.isEmpty else { self.lock.withLock { self.stopped = true }; break }
                    let via = running[(i + attempt) % running.count]
                    do {
                        let out = try await cluster.submit(.sendMessage(SendMessage(roomId: room, clientMessageId: id, body: id)),
                                                           room: room, as: Self.member, via: via)
                        if case .success(.messageSent) = out.result {
                            result.acked[room, default: []].insert(id)
                            self.lock.withLock { self.ackedCount += 1 }
                            done = true
                        } else if out.errorCode == .notEntered {
                            // The stand-in edge renews its lease from one event loop of the test process; on a
                            // machine running the whole suite it can fall silent past the lease, and the cluster
                            // ends its sessions, as it must. Re-enter, as a client told `lost` does.
                            result.reentered += 1
                            _ = try? await cluster.submit(.enter(EnterRoom(roomId: room, nickname: "Ann")), room: room,
                                                          as: Self.member, via: via)
                        } else {
                            lastError = "\(out.result)"
                        }
                    } catch {
                        lastError = "\(error)"
                    }
                    if !done {
                        result.retries += 1
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                }
                if !done { result.failed.append("\(id) via \(cluster.running.sorted()): \(lastError)") }
                i += 1
                // Steady traffic, not a flood: the point is sends in flight while the cluster changes.
                try? await Task.sleep(for: .milliseconds(25))
            }
            return result
        }
    }

    /// Waits until `count` sends were acknowledged (up to 120 s): a test changes the cluster once traffic
    /// flows, whatever the machine's speed, not after a fixed time.
    func waitFor(acknowledged count: Int) async throws {
        let deadline = Date().addingTimeInterval(120)
        while lock.withLock({ ackedCount }) < count {
            guard Date() < deadline else {
                throw LocalClusterError.failed("the message load reached \(lock.withLock { ackedCount }) of \(count) acknowledged")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    /// Stops once at least `minimum` sends were acknowledged in all (waiting up to 120 s for them), so that the
    /// checks after it see traffic however slowly a loaded machine ran it (issue 32).
    func stop(afterAcknowledged minimum: Int = 10) async -> Result {
        let deadline = Date().addingTimeInterval(120)
        while lock.withLock({ ackedCount }) < minimum && Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        lock.withLock { stopped = true }
        return await task?.value ?? Result()
    }
}

extension MessageLoad.Result {
    /// No send failed for good, some got through, and every acknowledged message is in its room's history
    /// exactly once (read through node `via`), with nothing else there.
    func expectEachStoredOnce(_ cluster: LocalCluster, rooms: [String], via: UInt64,
                              sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(failed.isEmpty, "sends that never succeeded: \(failed.prefix(5))", sourceLocation: sourceLocation)
        #expect(sent >= 10, "only \(sent) messages acknowledged", sourceLocation: sourceLocation)
        for room in rooms {
            let bodies = try await cluster.messageBodies(room: room, via: via)
            #expect(bodies.count == Set(bodies).count, "\(room): a message stored twice", sourceLocation: sourceLocation)
            #expect(Set(bodies) == acked[room, default: []], "\(room): history differs from what was acknowledged",
                    sourceLocation: sourceLocation)
        }
    }
}

extension LocalCluster {
    /// The bodies of every message in a room's history, in order (all pages), read through node `via`.
    func messageBodies(room: String, via: UInt64) async throws -> [String] {
        var bodies: [String] = []
        var after: UInt64 = 0
        while true {
            let page = try await submit(.historySince(roomId: room, afterSeq: after, limit: 100), room: room,
                                        as: .appServer, via: via)
            guard case .success(.history(let items)) = page.result else {
                throw LocalClusterError.failed("history of \(room): \(page.result)")
            }
            bodies += items.compactMap { if case .message(let m) = $0 { m.body } else { nil } }
            guard items.count == 100, let last = items.last?.seq else { return bodies }
            after = last
        }
    }
}
