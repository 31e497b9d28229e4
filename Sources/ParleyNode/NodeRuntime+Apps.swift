import Foundation
import ParleyCluster
import ParleyPlacement

extension NodeRuntime {
    /// Puts each configured app (`--app KEY:SECRET`) into the meta group when the group does not know it yet,
    /// so the first app exists without any API call. An app already there is left as it is: the meta group,
    /// not a node's flags, owns secrets once they exist. A new app requires CheckSum2 (SPEC T2; NIM's
    /// CheckSum is the app's explicit choice afterwards, `/v1/app/setSigning`), set in the same entry that
    /// creates it — so it waits until every node reads that entry (`Feature.appSigning`), which in a cluster
    /// being upgraded means until the upgrade is done. Retries until done or the node stops.
    func bootstrapApps() async {
        var pending = config.apps
        let secrets = MetaSecrets(clusterSecret: config.secret)
        var toldWaiting = false
        while !pending.isEmpty && !Task.isCancelled {
            if let meta = try? await raft.metaState().get() {
                for key in pending.keys.sorted() where meta.apps[key] != nil { pending[key] = nil }
                let everyNodeReadsIt = pending.isEmpty ? false : await edgeCluster.everyNodeHas(.appSigning)
                if !pending.isEmpty && !everyNodeReadsIt && !toldWaiting {
                    toldWaiting = true
                    logger.info("new server-API apps wait until every node runs peer protocol 4 (an older node is in the cluster, or not reached yet)")
                }
                for key in pending.keys.sorted() where everyNodeReadsIt {
                    let app = secrets.app(key, secret: pending[key]!)
                    switch try? await raft.submitMeta(.createApp(app, requireSignedBody: true)).get() {
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
