import ArgumentParser
import ParleyRooms
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `parley bench rooms`: applies per second of the room state machine on one core.
struct BenchRoomsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rooms",
        abstract: "Apply room commands on one core: send-message only, then a realistic mix.")

    @Option(help: "Rooms in the shard.") var rooms = 100
    @Option(help: "Users; half of them are in a room when a run starts.") var users = 10_000
    @Option(help: "Commands applied per run.") var operations = 1_000_000
    @Option(help: "Runs per workload; the median is reported.") var runs = 5
    @Option(help: "History entries kept per room (RoomLimits.maxHistoryPerRoom).") var historyPerRoom = 5000

    func validate() throws {
        guard rooms > 0, users >= rooms * 2, operations > 0, runs > 0, historyPerRoom > 0 else {
            throw ValidationError("need rooms > 0, users ≥ 2 × rooms, operations > 0, runs > 0, history > 0")
        }
    }

    func run() throws {
        print("parley bench rooms: \(rooms) rooms, \(users) users, \(operations) applies per run, \(runs) runs, "
            + "history \(historyPerRoom) per room")
        var limits = RoomLimits()
        limits.maxHistoryPerRoom = historyPerRoom
        for workload in RoomsWorkload.allCases {
            var wall: [Double] = []
            var cpu: [Double] = []
            var rejected = 0
            for run in 0 ..< runs {
                var plan = RoomsBenchPlan(rooms: rooms, users: users, seed: UInt64(run + 1))
                var state = plan.makeState(limits)
                let entries = plan.entries(workload, count: operations)
                var failures = 0
                let clock = ContinuousClock()
                let cpuStart = Self.threadCPUSeconds()
                let elapsed = clock.measure {
                    for (command, context) in entries {
                        if state.apply(command, context: context).errorCode != nil { failures += 1 }
                    }
                }
                let cpuSeconds = Self.threadCPUSeconds() - cpuStart
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                wall.append(Double(operations) / seconds)
                cpu.append(Double(operations) / cpuSeconds)
                rejected = failures
            }
            let medianWall = Self.median(wall)
            let medianCPU = Self.median(cpu)
            print("\(workload.rawValue): \(Int(medianWall)) applies/s wall, \(Int((1e9 / medianWall).rounded())) ns/apply; "
                + "\(Int(medianCPU)) applies/s per CPU-second of the applying thread, "
                + "\(Int((1e9 / medianCPU).rounded())) ns/apply (median of \(runs); rejected in last run: \(rejected))")
        }
    }

    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// CPU time of this thread: on a shared machine the wall clock also counts other processes.
    static func threadCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}

/// The two workloads of the benchmark.
enum RoomsWorkload: String, CaseIterable {
    case sendOnly = "send-message"
    /// 70 % send, 20 % enter / exit, 10 % moderation and queue.
    case mix = "mix 70/20/10"
}

/// Builds the shard and the pre-generated entries of one run, so only `apply` is timed.
struct RoomsBenchPlan {
    let rooms: Int
    let users: Int
    var rng: UInt64
    var time: Int64 = 1_700_000_000_000
    var index: UInt64 = 0
    /// Who is online, kept by the plan so the mix stays mostly valid.
    var online: [Bool]

    init(rooms: Int, users: Int, seed: UInt64) {
        self.rooms = rooms
        self.users = users
        rng = seed &* 0x2545_F491_4F6C_DD1D | 1
        online = Array(repeating: false, count: users)
    }

    /// xorshift64*: deterministic and cheap; the benchmark needs no better.
    private mutating func random(_ n: Int) -> Int {
        rng ^= rng >> 12
        rng ^= rng << 25
        rng ^= rng >> 27
        return Int((rng &* 0x2545_F491_4F6C_DD1D) >> 33) % n
    }

    private func roomId(of user: Int) -> String { "room-\(user % rooms)" }

    private func actor(_ user: Int) -> CommandActor {
        .session(SessionIdentity(userId: "user-\(user)", sessionId: "session-\(user)", edgeId: "edge-\(user % 4)"))
    }

    private mutating func context(_ actor: CommandActor) -> ApplyContext {
        index += 1
        time += 1
        return ApplyContext(commandIndex: index, timestamp: time, actor: actor)
    }

    /// The rooms, with every even user entered into their room.
    mutating func makeState(_ limits: RoomLimits) -> RoomsState {
        var state = RoomsState(limits: limits)
        for r in 0 ..< rooms {
            let id = "room-\(r)"
            _ = state.apply(.createRoom(CreateRoom(roomId: id, creator: "user-\(r)", name: id)),
                            context: context(.appServer))
        }
        for u in stride(from: 0, to: users, by: 2) {
            _ = state.apply(.enter(EnterRoom(roomId: roomId(of: u), nickname: "n\(u)", roomExt: "{\"lv\":1}")),
                            context: context(actor(u)))
            online[u] = true
        }
        return state
    }

    private mutating func onlineUser() -> Int {
        var u = random(users)
        while !online[u] { u = (u + 1) % users }
        return u
    }

    /// `count` commands of the workload with their contexts.
    mutating func entries(_ workload: RoomsWorkload, count: Int) -> [(RoomCommand, ApplyContext)] {
        var out: [(RoomCommand, ApplyContext)] = []
        out.reserveCapacity(count)
        let body = "hello, this is a chat message of ordinary length"
        for _ in 0 ..< count {
            let dice = workload == .sendOnly ? 0 : random(100)
            switch dice {
            case 0 ..< 70:
                let u = onlineUser()
                out.append((.sendMessage(SendMessage(roomId: roomId(of: u), body: body)), context(actor(u))))
            case 70 ..< 90:
                let u = random(users)
                let command: RoomCommand = online[u]
                    ? .exit(roomId: roomId(of: u))
                    : .enter(EnterRoom(roomId: roomId(of: u), nickname: "n\(u)", roomExt: "{\"lv\":1}"))
                online[u].toggle()
                out.append((command, context(actor(u))))
            case 90 ..< 94:
                let u = onlineUser()
                out.append((.queueOffer(QueueOffer(roomId: roomId(of: u), key: "seat-\(random(8))", value: "user-\(u)",
                                                   transient: true)), context(actor(u))))
            case 94 ..< 97:
                let u = onlineUser()
                out.append((.queuePoll(roomId: roomId(of: u), key: ""), context(actor(u))))
            case 97 ..< 99:
                let u = onlineUser()
                out.append((.setTempMute(MemberUpdate(roomId: roomId(of: u), userId: "user-\(u)", duration: 1)),
                            context(.appServer)))
            default:
                let u = onlineUser()
                online[u] = false
                out.append((.kick(MemberUpdate(roomId: roomId(of: u), userId: "user-\(u)")), context(.appServer)))
            }
        }
        return out
    }
}
