// swift-tools-version:6.2
// Parley: the server side of a chat-room service, as a cluster of identical Swift nodes.
// Targets follow ../shared/DESIGN.md; each gets a folder under Sources/ once it has real content.
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

let package = Package(
    name: "Parley",
    products: [
        .executable(name: "parley", targets: ["parley"]),
        .library(name: "ParleyRooms", targets: ["ParleyRooms"]),
        .library(name: "ParleyRaft", targets: ["ParleyRaft"]),
        .library(name: "ParleySimulation", targets: ["ParleySimulation"]),
        .library(name: "ParleyClient", targets: ["ParleyClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // SPEC W3: the HTTP client for the calls a node makes to app servers (webhooks), with keep-alive and TLS.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .target(name: "ParleyWire", swiftSettings: strict),
        // The JSON value both the edge and the client SDK speak (the SDK may not import a server module).
        .target(name: "ParleyJSON", swiftSettings: strict),
        .target(
            name: "ParleyRooms",
            dependencies: ["ParleyWire", .product(name: "Collections", package: "swift-collections")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "parley",
            dependencies: [
                "ParleyRooms",
                "ParleyRaft",
                "ParleyStorage",
                "ParleyCluster", "ParleyHost",
                "ParleyShardState",
                "ParleyPlacement",
                "ParleyTransport",
                "ParleyEdge",
                "ParleyNode",
                "ParleyAPI",
                "ParleySimulation",
                "ParleyWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                // `parley dev`'s demo page plays an app server: it calls the server API (DevDemoServer).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // `parley dev --tls` makes its local CA and certificate in-process (DevCertificates).
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ParleyRoomsTests", dependencies: ["ParleyWire", "ParleyRooms"], swiftSettings: strict),
        // Issue 19: users' relationships (and, later, one-to-one and team messaging) as a pure state machine,
        // like ParleyRooms: no I/O, deterministic, snapshot and restore (docs/im.md).
        .target(name: "ParleyIM", dependencies: ["ParleyWire", .product(name: "Collections", package: "swift-collections")], swiftSettings: strict),
        .testTarget(name: "ParleyIMTests", dependencies: ["ParleyWire", "ParleyIM", "ParleyRaft"], swiftSettings: strict),
        .target(name: "ParleyRaft", swiftSettings: strict),
        // Raft's types in the project's binary form (messages between nodes, memberships on disk and in
        // snapshots): shared by the peer transport and the storage without either importing the other.
        .target(name: "ParleyRaftWire", dependencies: ["ParleyRaft", "ParleyWire"], swiftSettings: strict),
        .testTarget(name: "ParleyRaftTests", dependencies: ["ParleyRaft"], swiftSettings: strict),
        .target(
            name: "ParleyStorage",
            dependencies: [
                "ParleyRaft", "ParleyRaftWire", "ParleyRooms", "ParleyWire", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ParleyStorageTests", dependencies: ["ParleyTestSupport", "ParleyStorage", "ParleyRaftWire", "ParleyRooms", "ParleyWire", "ParleyNode", .product(name: "GRDB", package: "GRDB.swift")], swiftSettings: strict),
        .target(
            name: "ParleyTransport",
            dependencies: [
                "ParleyRaft", "ParleyRaftWire", "ParleyWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Issue 34: the pure machines out of ParleyCluster. What a shard's Raft group replicates (rooms and IM
        // side by side, the request ledger) ...
        .target(
            name: "ParleyShardState",
            dependencies: ["ParleyRooms", "ParleyIM", "ParleyWire", .product(name: "Collections", package: "swift-collections")],
            swiftSettings: strict
        ),
        // ... and the meta state, placement and its planners (leader balance, the placement table).
        .target(
            name: "ParleyPlacement",
            dependencies: [
                "ParleyRaft", "ParleyRooms", "ParleyWire", "ParleyShardState",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Issue 34: the multi-Raft host — a node's replicas of its groups, their ready cycles, apply, reads and
        // the shards' event logs — driven by ParleyCluster's driver; it imports neither the transport nor the
        // router, and hands its peer messages to whoever drives it.
        .target(
            name: "ParleyHost",
            dependencies: [
                "ParleyRaft", "ParleyRaftWire", "ParleyRooms", "ParleyIM", "ParleyStorage", "ParleyWire",
                "ParleyShardState", "ParleyPlacement",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Collections", package: "swift-collections"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "ParleyCluster",
            dependencies: [
                "ParleyRaft", "ParleyRaftWire", "ParleyRooms", "ParleyIM", "ParleyStorage", "ParleyWire", "ParleyTransport",
                "ParleyShardState", "ParleyPlacement", "ParleyHost",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Collections", package: "swift-collections"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "ParleyEdge",
            dependencies: [
                "ParleyRooms", "ParleyIM", "ParleyCluster", "ParleyHost", "ParleyShardState", "ParleyPlacement", "ParleyTransport", "ParleyWire", "ParleyJSON",
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyEdgeTests",
            dependencies: [
                "ParleyEdge", "ParleyRooms", "ParleyIM", "ParleyCluster", "ParleyHost", "ParleyShardState", "ParleyPlacement", "ParleyTransport", "ParleyTestSupport",
                "ParleyJSON", "ParleyRaft",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "ParleyAPI",
            dependencies: [
                "ParleyRooms", "ParleyIM", "ParleyCluster", "ParleyHost", "ParleyShardState", "ParleyPlacement", "ParleyTransport", "ParleyJSON",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "ParleyNode",
            dependencies: [
                "ParleyRaft", "ParleyRooms", "ParleyStorage", "ParleyCluster", "ParleyHost", "ParleyShardState", "ParleyPlacement", "ParleyTransport", "ParleyAPI", "ParleyEdge",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strict
        ),
        // What several test targets share (a test target cannot import another): running a tool to its end.
        .target(name: "ParleyTestSupport", path: "Tests/ParleyTestSupport", swiftSettings: strict),
        .testTarget(name: "ParleyNodeTests", dependencies: ["ParleyTestSupport", "ParleyNode", "ParleyCluster", "ParleyHost", "ParleyStorage", "ParleyRaft", "ParleyShardState", "ParleyPlacement", "ParleyTransport", "ParleyIM", "ParleyAPI", "ParleyRooms", "ParleyWire", "ParleyClient", .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Metrics", package: "swift-metrics")], swiftSettings: strict),
        .testTarget(name: "ParleyClusterTests", dependencies: ["ParleyTestSupport", "ParleyCluster", "ParleyHost", "ParleyShardState", "ParleyPlacement", "ParleyTransport", "ParleyRaftWire", "ParleyIM", "ParleyWire", .product(name: "Logging", package: "swift-log"), .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "Metrics", package: "swift-metrics"), .product(name: "Prometheus", package: "swift-prometheus")], swiftSettings: strict),
        // The client SDK imports nothing server-side (DESIGN.md): only the WebSocket client, NIO (and its TLS) and Logging.
        .target(
            name: "ParleyClient",
            dependencies: [
                "ParleyJSON",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The test target may run a protocol test peer (a tiny Hummingbird WebSocket server), never Parley itself.
        .testTarget(
            name: "ParleyClientTests",
            dependencies: [
                "ParleyClient",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "ParleySimulation",
            dependencies: ["ParleyRaft", "ParleyWire", .product(name: "Collections", package: "swift-collections")],
            swiftSettings: strict
        ),
        .testTarget(name: "ParleySimulationTests", dependencies: ["ParleyWire", "ParleySimulation"], swiftSettings: strict),
    ]
)
