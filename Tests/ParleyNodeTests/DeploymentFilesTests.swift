import Foundation
import ParleyTestSupport
import Testing

/// docker/compose.yaml and cluster/k8s/ checked by cluster/validate_deploy.py (PyYAML; `docker compose config`
/// too when the plugin exists). No container engine or Kubernetes API runs here.
@Suite struct DeploymentFilesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private func validate(root: URL) async throws -> (status: Int32, output: String) {
        try await runTool("/usr/bin/env", ["python3", root.appendingPathComponent("cluster/validate_deploy.py").path])
    }

    @Test func composeAndKubernetesFilesDescribeAConsistentThreeNodeCluster() async throws {
        let (status, output) = try await validate(root: Self.root)
        print(output)
        #expect(status == 0 && output.contains("ALL OK"), "\(output)")
    }

    /// The validator is only worth running if it notices a broken file: a copy whose third node is missing
    /// from the pods' peer list must fail.
    @Test func theValidatorRejectsAPeerListThatMissesAPod() async throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("parley-deploy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: copy) }
        for folder in ["docker", "cluster"] {
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: Self.root.appendingPathComponent(folder), to: copy.appendingPathComponent(folder))
        }
        let configMap = copy.appendingPathComponent("cluster/k8s/configmap.yaml")
        let text = try String(contentsOf: configMap, encoding: .utf8)
        let broken = text.replacingOccurrences(of: ",3=parley-2.parley-peers:7101", with: "")
        #expect(broken != text)
        try broken.write(to: configMap, atomically: true, encoding: .utf8)
        let (status, output) = try await validate(root: copy)
        #expect(status == 1 && output.contains("FAIL: k8s: pod parley-2"), "\(output)")
    }

    /// Issue 15: NIO's `.socketOption(X)` sets X at SOL_SOCKET, where TCP_NODELAY's number (1) is SO_DEBUG,
    /// which only root may set: a peer link that did so never connected under the image's user. Every TCP
    /// option in the sources must be set with `.tcpOption`. (cluster/deployed/run.py proves the running
    /// cluster; this catches the mistake before anything runs.)
    @Test func noSourceSetsATCPOptionAtTheSocketLevel() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(files.count > 50)
        var offenders: [String] = []
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(".socketOption(.tcp_") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                offenders.append("\(file.lastPathComponent):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(offenders.isEmpty, "TCP options set at the socket level: \(offenders)")
    }
}
