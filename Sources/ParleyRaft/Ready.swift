/// The answer to a read-index request: the read is linearizable once the application has applied
/// everything up to `index`.
public struct ReadState: Sendable, Hashable {
    public var index: LogIndex
    public var requestContext: [UInt8]

    public init(index: LogIndex, requestContext: [UInt8]) {
        self.index = index
        self.requestContext = requestContext
    }
}

/// Everything the application must do after the node changed: persist, send, apply. Handle it in the
/// order the fields are documented, then call `RawNode.advance(_:)`.
public struct Ready: Sendable {
    /// New volatile state (nil = unchanged).
    public var softState: SoftState?
    /// New hard state to persist (nil = unchanged).
    public var hardState: HardState?
    /// Entries to append to stable storage BEFORE sending `messages`.
    public var entries: [Entry]
    /// A snapshot to persist before anything else.
    public var snapshot: Snapshot?
    /// Committed entries to apply, in order (durable once `entries` are persisted).
    public var committedEntries: [Entry]
    /// Messages to send AFTER `entries`, `hardState` and `snapshot` are durable.
    public var messages: [Message]
    /// Answers to read-index requests.
    public var readStates: [ReadState]
    /// Whether the writes must be synced to disk before the messages are sent.
    public var mustSync: Bool

    public init(softState: SoftState? = nil, hardState: HardState? = nil, entries: [Entry] = [],
                snapshot: Snapshot? = nil, committedEntries: [Entry] = [], messages: [Message] = [],
                readStates: [ReadState] = [], mustSync: Bool = false) {
        self.softState = softState
        self.hardState = hardState
        self.entries = entries
        self.snapshot = snapshot
        self.committedEntries = committedEntries
        self.messages = messages
        self.readStates = readStates
        self.mustSync = mustSync
    }
}
