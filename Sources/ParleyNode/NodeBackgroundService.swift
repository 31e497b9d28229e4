import ServiceLifecycle

/// One loop of a node's background work (joining the meta group, following the registry and drains, watching
/// elections, sampling activity) as a service of the node's one `ServiceGroup`: cancelled when the group shuts
/// it down gracefully; one that finishes early (the join does) waits for that, and stops nothing else.
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

    var configuration: ServiceGroupConfiguration.ServiceConfiguration {
        .init(service: self, successTerminationBehavior: .ignore, serviceName: description)
    }
}
