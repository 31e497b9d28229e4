import ParleyRooms
import ParleyWire

/// A deterministic state machine a Raft group replicates: the rooms of a shard, or the cluster's meta
/// state. Applying reads time only from the context and nothing from the host.
public protocol ReplicatedMachine: Sendable {
    associatedtype Command: BinaryCodable & Sendable
    associatedtype Outcome: Sendable
    mutating func apply(_ command: Command, context: ApplyContext) -> Outcome
    func snapshot() -> [UInt8]
    init(restoring bytes: [UInt8]) throws
    /// What a command the group refused before applying it answers (SPEC A7: its request was applied
    /// already, or its app holds too many request keys).
    static func refusedRequest(_ why: RequestRefusal) -> Outcome
    /// Issue 34: whether `command` changes nothing, so a replica answers it from its state once Raft's read
    /// index says that state is current, and no entry is written for it.
    static func isRead(_ command: Command) -> Bool
    /// The answer to a read (`isRead`), from the state as it is.
    func read(_ command: Command, context: ApplyContext) -> Outcome
}

extension ReplicatedMachine {
    public static func isRead(_ command: Command) -> Bool { false }

    /// A read's apply on a copy: the copy shares the state's storage, and a read writes none of it.
    public func read(_ command: Command, context: ApplyContext) -> Outcome {
        var copy = self
        return copy.apply(command, context: context)
    }
}

/// Why a group refused a server-API request's command without applying it.
public enum RequestRefusal: Sendable {
    /// The same app key and nonce (the same command of the request) applied already, within the window.
    case replayed
    /// The app holds `RequestLedger.maxPerApp` live keys in this group.
    case ledgerFull

    public var code: Int { self == .replayed ? 10406 : 10429 }
    public var message: String {
        self == .replayed ? "this signed request was applied already (its Nonce is used, on any node)"
            : "too many signed writes in the signature window for this app; retry later"
    }
}

extension RoomsState: ReplicatedMachine {
    public typealias Command = RoomCommand
    public typealias Outcome = ApplyOutcome

    public static func refusedRequest(_ why: RequestRefusal) -> ApplyOutcome {
        ApplyOutcome(result: .failure(RoomError(why == .replayed ? .requestReplayed : .tooManyRequests, why.message)),
                     events: [])
    }
}
