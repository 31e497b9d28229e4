import Foundation
import Testing

/// docker/compose.yaml and cluster/k8s/ checked by cluster/validate_deploy.py (PyYAML; `docker compose config`
/// too when the plugin exists). No container engine or Kubernetes API runs here.
@Suite struct DeploymentFilesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private func validate(root: URL) throws -> (status: Int32, output: String) {
        try runTool("/usr/bin/env", ["python3", root.appendingPathComponent("cluster/validate_deploy.py").path])
    }

    @Test func composeAndKubernetesFilesDescribeAConsistentThreeNodeCluster() throws {
        let (status, output) = try validate(root: Self.root)
        print(output)
        #expect(status == 0 && output.contains("ALL OK"), "\(output)")
    }

    /// The validator is only worth running if it notices a broken file: a copy whose third node is missing
    /// from the pods' peer list must fail.
    @Test func theValidatorRejectsAPeerListThatMissesAPod() throws {
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
        let (status, output) = try validate(root: copy)
        #expect(status == 1 && output.contains("FAIL: k8s: pod parley-2"), "\(output)")
    }
}
