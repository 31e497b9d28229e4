import Foundation
import ParleyCluster

extension NodeConfig {
    /// Parses server-API apps from `KEY:SECRET` items (repeated `--app` flags, or `k1:s1,k2:s2` from
    /// `PARLEY_APPS` / the config file's `apps`). The meta group checks the lengths again when it applies.
    public static func parseApps(_ items: [String]) throws -> [String: String] {
        var out: [String: String] = [:]
        for item in items.flatMap({ $0.split(separator: ",") }) {
            let parts = item.trimmingCharacters(in: .whitespaces).split(separator: ":", maxSplits: 1)
            guard parts.count == 2, (1...64).contains(parts[0].utf8.count), (16...128).contains(parts[1].utf8.count) else {
                throw NodeConfigError.invalid("bad app '\(item.prefix(80))': expected KEY:SECRET, key 1-64 bytes, secret 16-128 bytes")
            }
            out[String(parts[0])] = String(parts[1])
        }
        return out
    }
}
