import NIOCore

/// What one peer link knows of its own health: the last error, when it last worked, how often it failed —
/// and when a failure is worth a log line. A value type driven by the link (on its loop) with the time
/// passed in, so the rate limit can be tested without waiting.
///
/// Logging: the first failure of a streak (a connect that fails, or a connection that drops) is logged at
/// once; while the peer stays unreachable, one line per log period with the attempts since the last line,
/// the period doubling from the link's longest retry backoff up to `maxLogPeriod`; the first success
/// after a logged failure is logged too. So a dead peer costs a handful of lines per hour, not one per
/// retry, and the operator still sees it named with its error.
struct PeerLinkHealth {
    /// A log line the link should write now.
    enum Report: Equatable {
        /// Connecting failed `attempts` times since the last line; the link was last up `downFor` ago.
        case unreachable(error: String, attempts: Int, downFor: TimeAmount?)
        /// An established connection broke.
        case dropped(error: String)
        /// Up again after `downFor` and `attempts` failed attempts.
        case reconnected(downFor: TimeAmount, attempts: Int)
    }

    private(set) var lastError: String?
    private(set) var lastErrorAt: NIODeadline?
    /// When the link was last up (connected with its Raft stream open).
    private(set) var lastUpAt: NIODeadline?
    private(set) var isUp = false
    /// Failed connection attempts (and refused streams) since the link was made.
    private(set) var failures = 0

    private let firstLogPeriod: TimeAmount
    private let maxLogPeriod: TimeAmount
    private var logPeriod: TimeAmount
    private var nextLogAt: NIODeadline?
    private var attemptsSinceLog = 0
    /// The current streak of trouble: when it began, its failed attempts, and whether it was logged (only
    /// then is the recovery worth a line).
    private var streakStart: NIODeadline?
    private var streakFailures = 0
    private var streakLogged = false

    init(firstLogPeriod: TimeAmount, maxLogPeriod: TimeAmount = .seconds(60)) {
        self.firstLogPeriod = firstLogPeriod
        self.maxLogPeriod = max(firstLogPeriod, maxLogPeriod)
        logPeriod = firstLogPeriod
    }

    /// A connection attempt (or the opening of its streams) failed.
    mutating func failed(_ error: String, at now: NIODeadline) -> Report? {
        failures += 1
        streakFailures += 1
        attemptsSinceLog += 1
        noteTrouble(error, at: now)
        guard isDue(at: now) else { return nil }
        let report = Report.unreachable(error: error, attempts: attemptsSinceLog, downFor: lastUpAt.map { now - $0 })
        logged(at: now)
        return report
    }

    /// An established connection broke.
    mutating func dropped(_ error: String, at now: NIODeadline) -> Report? {
        if isUp { lastUpAt = now }
        noteTrouble(error, at: now)
        guard isDue(at: now) else { return nil }  // a flapping link is held to the same period
        logged(at: now)
        return .dropped(error: error)
    }

    /// The link is up again.
    mutating func up(at now: NIODeadline) -> Report? {
        let report = streakLogged ? streakStart.map { Report.reconnected(downFor: now - $0, attempts: streakFailures) } : nil
        isUp = true
        lastUpAt = now
        streakStart = nil
        streakFailures = 0
        streakLogged = false
        attemptsSinceLog = 0
        // The period starts short again, but not before the one under way ends: a link that flaps keeps
        // to one line (and one recovery line) per period.
        logPeriod = firstLogPeriod
        return report
    }

    /// 0 while up; nil if the link was never up.
    func secondsSinceUp(at now: NIODeadline) -> Double? {
        isUp ? 0 : lastUpAt.map { Self.seconds(now - $0) }
    }

    func secondsSinceError(at now: NIODeadline) -> Double? {
        lastErrorAt.map { Self.seconds(now - $0) }
    }

    private mutating func noteTrouble(_ error: String, at now: NIODeadline) {
        lastError = error
        lastErrorAt = now
        isUp = false
        if streakStart == nil { streakStart = now }
    }

    private func isDue(at now: NIODeadline) -> Bool {
        nextLogAt.map { now >= $0 } ?? true
    }

    private mutating func logged(at now: NIODeadline) {
        streakLogged = true
        attemptsSinceLog = 0
        nextLogAt = now + logPeriod
        logPeriod = min(logPeriod * 2, maxLogPeriod)
    }

    private static func seconds(_ t: TimeAmount) -> Double { Double(t.nanoseconds) / 1e9 }
}
