import Foundation
import ParleyCluster

extension NodeRuntime {
    /// Puts each configured app (`--app KEY:SECRET`) into the meta group when the group does not know it yet,
    /// so the first app exists without any API call. An app already there is left as it is: the meta group,
    /// not a node's flags, owns secrets once they exist. Retries until done or the node stops.
    func bootstrapApps() async {
        var pending = config.apps
        let secrets = MetaSecrets(clusterSecret: config.secret)
        while !pending.isEmpty && !Task.isCancelled {
            if let meta = try? await driver.metaState().get() {
                for key in pending.keys.sorted() {
                    if meta.apps[key] != nil { pending[key] = nil; continue }
                    switch try? await driver.submitMeta(.putApp(secrets.app(key, secret: pending[key]!))).get() {
                    case .done?:
                        logger.info("registered server-API app", metadata: ["appKey": "\(key)"])
                        pending[key] = nil
                    case .refused(_, let why)?:
                        logger.error("meta refused server-API app", metadata: ["appKey": "\(key)", "why": "\(why)"])
                        pending[key] = nil
                    default:
                        break  // no meta leader yet
                    }
                }
            }
            if !pending.isEmpty { try? await Task.sleep(for: .milliseconds(200)) }
        }
    }
}
