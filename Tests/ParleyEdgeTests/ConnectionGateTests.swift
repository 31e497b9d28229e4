import NIOCore
import ParleyEdge
import Testing

/// SPEC A2, issue 33: the client port's connection caps count sources (an IPv4 address, an IPv6 /64) and, past
/// half full, give each source only its share of what is left, so a few sources cannot lock everyone out.
struct ConnectionGateTests {
    @Test("A2: eight sources opening connections as fast as they can settle well below the node's cap; newcomers get in")
    func eightSourcesCannotFillTheNode() {
        // The defaults' proportions (15,000 and 2,000), a tenth of them.
        let gate = ConnectionGate(maxTotal: 1_500, maxPerSource: 200)
        let flooders = (1...8).map { "198.51.100.\($0)" }
        var refused = Set<String>()
        while refused.count < flooders.count {
            for source in flooders where !refused.contains(source) {
                if gate.admit(source) != nil { refused.insert(source) }
            }
        }
        // Each stops at its share of what is left (200 × free ÷ 750): together near 1,021 of 1,500, where
        // per-source caps alone (8 × 200) would have filled the node.
        #expect(gate.open < 1_100, "the flooders hold \(gate.open) of 1500")
        #expect(gate.admit(flooders[0]) == .sourceShare)
        // An app server's API calls and returning users, each from its own address, still get in, up to the
        // least share each.
        for newcomer in (10...20).map({ "203.0.113.\($0)" }) {
            for _ in 0..<16 { #expect(gate.admit(newcomer) == nil) }
        }
        #expect(gate.open < 1_500)
    }

    @Test("A2: below half full a source may hold its whole cap; the node's cap is a hard limit")
    func capsBelowAndAtTheTop() {
        let gate = ConnectionGate(maxTotal: 100, maxPerSource: 30, minShare: 4)
        for _ in 0..<30 { #expect(gate.admit("192.0.2.1") == nil) }
        #expect(gate.admit("192.0.2.1") == .sourceCap)
        // 25 sources of 4 (the least share) fill the rest; the 101st connection finds the node full.
        var admitted = 30
        for source in 2...30 {
            for _ in 0..<4 where gate.admit("192.0.2.\(source)") == nil { admitted += 1 }
        }
        #expect(admitted == 100 && gate.open == 100)
        #expect(gate.admit("192.0.2.200") == .nodeFull)
        gate.release("192.0.2.1")
        #expect(gate.admit("192.0.2.200") == nil)
    }

    @Test("A2: an IPv6 /64 is one source; an IPv4-mapped address is its IPv4 address")
    func sources() throws {
        let source = { (ip: String) in ConnectionGate.source(of: try SocketAddress(ipAddress: ip, port: 4000)) }
        #expect(try source("2001:db8:1:2::5") == source("2001:db8:1:2:ffff:ffff:ffff:9"))
        #expect(try source("2001:db8:1:2::5") != source("2001:db8:1:3::5"))
        #expect(try source("2001:db8:1:2::5") == "2001:db8:1:2::/64")
        #expect(try source("::ffff:10.1.2.3") == "10.1.2.3")
        #expect(try source("10.1.2.3") == "10.1.2.3")
        #expect(ConnectionGate.source(of: nil) == "?")
    }
}
