import Foundation
import Testing
import ParleyCluster
import ParleyNode

/// Issue 18: what a node registers as its addresses. A container listens on every interface, which names
/// no host: other nodes reach it at its own `--peers` entry, and clients (E6, a drain's `reconnect` event)
/// at `--advertise`, else at its peer host with the client port.
@Suite struct NodeConfigAddressTests {
    func config(listen: String, peers: String, id: UInt64 = 2) throws -> NodeConfig {
        NodeConfig(id: id, listen: NodeConfig.Address(Substring(listen))!, peerListen: NodeConfig.Address("0.0.0.0:7101")!,
                   peers: try NodeConfig.parsePeers(peers), dataDirectory: "/tmp/x", secret: "secret-secret")
    }

    @Test func aContainerIsReachedAtItsNameNotAtItsListenAddress() throws {
        var c = try config(listen: "0.0.0.0:8101", peers: "2=parley-2:7101")
        #expect("\(c.advertisedPeerAddress)" == "parley-2:7101")
        #expect("\(c.advertisedClientAddress)" == "parley-2:8101")
        c.advertise = NodeConfig.Address("203.0.113.7:8102")
        #expect("\(c.advertisedClientAddress)" == "203.0.113.7:8102", "--advertise wins (a published host port)")
        let ipv6 = try config(listen: "[::]:8101", peers: "2=parley-2:7101")
        #expect("\(ipv6.advertisedClientAddress)" == "parley-2:8101")
    }

    @Test func aNodeListeningOnOneAddressKeepsIt() throws {
        let c = try config(listen: "10.0.0.2:8101", peers: "1=10.0.0.1:7101,2=10.0.0.2:7101")
        #expect("\(c.advertisedClientAddress)" == "10.0.0.2:8101" && "\(c.advertisedPeerAddress)" == "10.0.0.2:7101")
        #expect(NodeConfig.isEveryInterface("0.0.0.0") && NodeConfig.isEveryInterface("::") && !NodeConfig.isEveryInterface("127.0.0.1"))
    }
}
