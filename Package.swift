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
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
        .target(
            name: "ParleyRooms",
            dependencies: [.product(name: "Collections", package: "swift-collections")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "parley",
            dependencies: [
                "ParleyRooms",
                "ParleyRaft",
                "ParleySimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ParleyRoomsTests", dependencies: ["ParleyRooms"], swiftSettings: strict),
        .target(name: "ParleyRaft", swiftSettings: strict),
        .testTarget(name: "ParleyRaftTests", dependencies: ["ParleyRaft"], swiftSettings: strict),
        .target(
            name: "ParleySimulation",
            dependencies: ["ParleyRaft", .product(name: "Collections", package: "swift-collections")],
            swiftSettings: strict
        ),
        .testTarget(name: "ParleySimulationTests", dependencies: ["ParleySimulation"], swiftSettings: strict),
    ]
)
