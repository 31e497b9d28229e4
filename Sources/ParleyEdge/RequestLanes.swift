/// Which of a connection's queued requests may run now (issue 35 item 4: pipelined connections).
///
/// A client may send many requests without waiting for their answers (answers carry the request's `id`).
/// Requests of one lane run one at a time in the order they came — a room's requests are one lane, so one
/// sender's messages keep their order in the room — while different lanes run side by side, at most
/// `maxRunning` at once. A barrier (`hello`, `enter`, `exit`, `imLogin`, and the connection's own events:
/// open, refuse, idle, closed) changes what later requests see: it waits until everything before it has
/// finished, runs alone, and nothing after it starts before it has finished.
///
/// A value type driven from the connection's event loop; it knows nothing of what a job is.
struct RequestLanes<Job> {
    enum Lane: Hashable {
        case barrier
        case named(String)
    }

    private var queued: [(lane: Lane, job: Job)] = []
    private var busy: Set<String> = []
    private var barrierRunning = false
    private(set) var running = 0
    let maxRunning: Int

    init(maxRunning: Int) {
        precondition(maxRunning >= 1)
        self.maxRunning = maxRunning
    }

    /// Requests waiting or running.
    var count: Int { queued.count + running }

    mutating func add(_ job: Job, lane: Lane) {
        queued.append((lane, job))
    }

    /// The jobs that may start now, in the order they came; each counts as running until `finished(_:)`.
    mutating func startable() -> [(lane: Lane, job: Job)] {
        var started: [(lane: Lane, job: Job)] = []
        guard !barrierRunning else { return started }
        // Lanes that have an earlier job still waiting: a later job of theirs may not pass it.
        var waiting: Set<String> = []
        var i = 0
        while i < queued.count, running < maxRunning {
            switch queued[i].lane {
            case .barrier:
                guard i == 0, running == 0 else { return started }
                barrierRunning = true
                running = 1
                started.append(queued.removeFirst())
                return started
            case .named(let name):
                if busy.contains(name) || waiting.contains(name) {
                    waiting.insert(name)
                    i += 1
                } else {
                    busy.insert(name)
                    running += 1
                    started.append(queued.remove(at: i))
                }
            }
        }
        return started
    }

    /// A job of `lane` finished.
    mutating func finished(_ lane: Lane) {
        precondition(running > 0)
        running -= 1
        switch lane {
        case .barrier: barrierRunning = false
        case .named(let name): busy.remove(name)
        }
        // A quiet connection holds no buffer (issue 5's small idle connection).
        if running == 0, queued.isEmpty { queued = [] }
    }
}
