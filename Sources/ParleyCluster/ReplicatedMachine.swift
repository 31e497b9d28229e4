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
}

extension RoomsState: ReplicatedMachine {
    public typealias Command = RoomCommand
    public typealias Outcome = ApplyOutcome
}
