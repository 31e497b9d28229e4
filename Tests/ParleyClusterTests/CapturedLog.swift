import Logging
import NIOConcurrencyHelpers

/// A logger whose lines (message and metadata, one string each) a test can read back.
final class CapturedLog: Sendable {
    private let lines = NIOLockedValueBox<[String]>([])
    var messages: [String] { lines.withLockedValue { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(sink: self) }
    }

    fileprivate func add(_ line: String) { lines.withLockedValue { $0.append(line) } }

    private struct Handler: LogHandler {
        let sink: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            let all = metadata.merging(explicit ?? [:]) { $1 }
            let fields = all.keys.sorted().map { "\($0)=\(all[$0]!)" }.joined(separator: " ")
            sink.add("\(level) \(message) \(fields)")
        }
    }
}
