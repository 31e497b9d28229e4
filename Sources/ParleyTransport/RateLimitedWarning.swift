import Logging
import NIOConcurrencyHelpers
import NIOCore

/// One warning line at most per `period`, however often its cause happens, with how many times it happened
/// since the last line: refused credentials, signatures and logins are worth seeing, and a flood of them must
/// not become a flood of log lines.
public final class RateLimitedWarning: Sendable {
    private let logger: Logger
    private let message: Logger.Message
    private let period: TimeAmount
    private let state = NIOLockedValueBox<(count: Int, lastLog: NIODeadline?)>((0, nil))

    public init(logger: Logger, message: Logger.Message, period: TimeAmount = .seconds(10)) {
        self.logger = logger
        self.message = message
        self.period = period
    }

    /// Counts one occurrence; logs it (with `metadata` and the count since the last line) if the period allows.
    public func happened(_ metadata: @autoclosure () -> Logger.Metadata) {
        let now = NIODeadline.now()
        let count: Int? = state.withLockedValue { s in
            s.count += 1
            if let last = s.lastLog, now - last < period { return nil }
            defer { s = (0, now) }
            return s.count
        }
        guard let count else { return }
        var fields = metadata()
        fields["sinceLastLine"] = "\(count)"
        logger.warning(message, metadata: fields)
    }
}
