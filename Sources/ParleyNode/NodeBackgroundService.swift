import ParleyCluster
import ServiceLifecycle

/// One loop of a node's background work — joining the meta group, following the registry and drains,
/// watching elections, sampling activity, and the driver's duties (edge leases, history expiry, leader
/// balance, placement) — as a service of the node's one `ServiceGroup`: cancelled when the group shuts it
/// down gracefully; one that finishes early (the join does) waits for that, and stops nothing else.
struct NodeBackgroundService: Service, CustomStringConvertible {
    let description: String
    private let body: @Sendable () async -> Void

    init(_ description: String, _ body: @escaping @Sendable () async -> Void) {
        self.description = description
        self.body = body
    }

    func run() async {
        await cancelWhenGracefulShutdown(body)
        // A loop that ends on its own (the join does) stays until the group reaches it: a service that returns
        // while the group is shutting another one down is an error to ServiceLifecycle (the node exited 1).
        try? await gracefulShutdown()
    }

    /// A driver's periodic job: its first run after `initialDelay`, then one every `period`.
    init(every duty: DriverDuty) {
        self.init(duty.name) {
            var pause = duty.initialDelay
            while !Task.isCancelled {
                try? await Task.sleep(for: .nanoseconds(pause.nanoseconds))
                guard !Task.isCancelled else { return }
                try? await duty.run().get()
                pause = duty.period
            }
        }
    }

    var configuration: ServiceGroupConfiguration.ServiceConfiguration {
        .init(service: self, successTerminationBehavior: .ignore, serviceName: description)
    }
}
