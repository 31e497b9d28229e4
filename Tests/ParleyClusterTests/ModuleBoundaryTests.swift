import Foundation
import Testing

/// Issue 34 item 4 (docs/architecture.md, "Modules"): the lines between the modules are the architecture, so
/// they are checked here, from the sources' own `import`s — SwiftPM lets a target import a module it does not
/// declare when that module happens to be built first, so Package.swift alone does not keep them.
@Suite struct ModuleBoundaryTests {
    /// The package's `Sources` folder, from this file's place in `Tests/ParleyClusterTests`.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// Every module a target's files import, with the files that import it.
    static func imports(of target: String) throws -> [String: [String]] {
        let folder = sources.appendingPathComponent(target)
        let files = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(!files.isEmpty, "no sources for \(target)")
        var found: [String: [String]] = [:]
        let line = try Regex(#"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*import\s+(?:(?:struct|class|enum|protocol|func|var|typealias)\s+)?([A-Za-z0-9_]+)"#)
        for file in files {
            for text in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                guard let match = try line.firstMatch(in: String(text)), let module = match.output[1].substring else { continue }
                found[String(module), default: []].append(file.lastPathComponent)
            }
        }
        return found
    }

    static let systemModules: Set<String> = ["Foundation", "Glibc", "Darwin", "Dispatch", "Synchronization"]

    /// The host drives groups and storage; the driver in ParleyCluster wires it to the peers. The host names
    /// nothing of the transport, the router, the edge or the node (session 45: its own target).
    @Test func theHostImportsOnlyTheMachinesTheStorageAndItsLibraries() throws {
        let allowed: Set<String> = Self.systemModules.union([
            "ParleyRaft", "ParleyRaftWire", "ParleyRooms", "ParleyIM", "ParleyStorage", "ParleyWire", "ParleyShardState",
            "ParleyPlacement", "NIOCore", "Collections", "Metrics",
        ])
        for (module, files) in try Self.imports(of: "ParleyHost") where !allowed.contains(module) {
            Issue.record("ParleyHost imports \(module) (in \(files.sorted().joined(separator: ", ")))")
        }
    }

    /// The transport carries bytes between nodes: nothing of rooms, IM, storage, the host or the router.
    @Test func theTransportImportsNothingOfTheDomainTheStorageOrTheHost() throws {
        let forbidden: Set<String> = ["ParleyRooms", "ParleyIM", "ParleyStorage", "ParleyShardState", "ParleyPlacement",
                                      "ParleyHost", "ParleyCluster", "ParleyEdge", "ParleyAPI", "ParleyNode"]
        for (module, files) in try Self.imports(of: "ParleyTransport") where forbidden.contains(module) {
            Issue.record("ParleyTransport imports \(module) (in \(files.sorted().joined(separator: ", ")))")
        }
    }

    /// The replicated machines and their codecs are pure (deterministic apply): no I/O library, no storage, no
    /// transport, host or router — and Raft itself imports nothing at all.
    @Test func thePureModulesImportNoIOAndNothingAboveThem() throws {
        let pure: [String: Set<String>] = [
            "ParleyRaft": [],
            "ParleyWire": ["Glibc", "Darwin"],
            "ParleyRaftWire": ["ParleyRaft", "ParleyWire"],
            "ParleyRooms": ["ParleyWire", "Collections"],
            "ParleyIM": ["ParleyWire", "Collections"],
            "ParleyShardState": ["ParleyRooms", "ParleyIM", "ParleyWire", "Collections"],
            "ParleyPlacement": ["ParleyRaft", "ParleyRooms", "ParleyWire", "ParleyShardState", "Crypto", "Foundation", "Glibc", "Darwin"],
        ]
        for (target, allowed) in pure {
            for (module, files) in try Self.imports(of: target) where !allowed.contains(module) {
                Issue.record("\(target) imports \(module) (in \(files.sorted().joined(separator: ", ")))")
            }
        }
    }
}
