import NIOCore

/// One periodic job of a node's driver (edge leases, history expiry, leader balance, placement): what the node
/// runs as a service of its `ServiceGroup` (issue 34), waiting `initialDelay`, then calling `run` every
/// `period`. `run` does the work on the driver's loop.
public struct DriverDuty: Sendable {
    public let name: String
    public let initialDelay: TimeAmount
    public let period: TimeAmount
    public let run: @Sendable () -> EventLoopFuture<Void>
}
