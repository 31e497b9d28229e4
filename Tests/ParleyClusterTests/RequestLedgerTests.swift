import Testing
@testable import ParleyCluster
@testable import ParleyHost
import ParleyWire
@testable import ParleyShardState

/// SPEC A7: the request keys a group holds — refused while held, forgotten by entry time, bounded per app,
/// encoded the same whatever order they arrived in.
@Suite struct RequestLedgerTests {
    static func key(_ app: String, _ nonce: String, expires: Int64 = 10_000) -> RequestKey {
        RequestKey(id: "\(app)\u{1F}\(nonce)#s0#0", expiresAt: expires)
    }

    @Test func A7_aKeyIsRefusedUntilItExpiresByEntryTime() {
        var ledger = RequestLedger()
        #expect(ledger.admit(Self.key("a", "n1"), now: 1_000) == .fresh)
        #expect(ledger.admit(Self.key("a", "n1"), now: 2_000) == .replayed)
        #expect(ledger.admit(Self.key("b", "n1"), now: 2_000) == .fresh, "another app's nonce is its own")
        #expect(ledger.admit(Self.key("a", "n1"), now: 10_000) == .replayed, "held through its expiry")
        #expect(ledger.admit(Self.key("a", "n1", expires: 30_000), now: 10_001) == .fresh, "gone after it")
        // Purged by a later entry's time.
        _ = ledger.admit(Self.key("a", "n2", expires: 50_000), now: 40_000)
        #expect(ledger.expiries.keys.sorted() == [Self.key("a", "n2").id])
    }

    @Test func A7_anAppHoldsAtMostItsShare() {
        var ledger = RequestLedger()
        for i in 0..<RequestLedger.maxPerApp { #expect(ledger.admit(Self.key("a", "n\(i)"), now: 1) == .fresh) }
        #expect(ledger.admit(Self.key("a", "one-more"), now: 1) == .full)
        #expect(ledger.admit(Self.key("b", "other-app"), now: 1) == .fresh)
        // Once the window passes, room again.
        #expect(ledger.admit(Self.key("a", "later", expires: 90_000), now: 20_000) == .fresh)
    }

    @Test func A7_theEncodingIsDeterministicAndRoundTrips() throws {
        var a = RequestLedger(), b = RequestLedger()
        for i in 0..<50 { _ = a.admit(Self.key("a", "n\(i)"), now: 5) }
        for i in (0..<50).reversed() { _ = b.admit(Self.key("a", "n\(i)"), now: 5) }
        var wa = ByteWriter(), wb = ByteWriter()
        a.encode(to: &wa)
        b.encode(to: &wb)
        #expect(wa.bytes == wb.bytes)
        var r = ByteReader(wa.bytes)
        var restored = try RequestLedger(from: &r)
        #expect(restored == a)
        #expect(restored.admit(Self.key("a", "n7"), now: 6) == .replayed)
    }

    @Test func A7_aProposalCarriesItsKeyAndAnOldProposalStillReads() throws {
        let id = ProposalID(node: 1, boot: 2, sequence: 3)
        let keyed = ShardProposal(id: id, timestamp: 9, actor: .appServer, command: .listRooms(after: "", limit: 5),
                                  requestKey: Self.key("a", "n"))
        let back = try ShardProposal(decoding: keyed.encoded())
        #expect(back.requestKey == keyed.requestKey && back.command == keyed.command && back.timestamp == 9)
        // Version 1 (no key): the same bytes without the flag.
        var v1 = ShardProposal(id: id, timestamp: 9, actor: .appServer, command: .listRooms(after: "", limit: 5)).encoded()
        v1[0] = 1
        v1.remove(at: v1.count - ShardProposal(id: id, timestamp: 9, actor: .appServer,
                                               command: .listRooms(after: "", limit: 5)).command.encoded().count - 1)
        let old = try ShardProposal(decoding: v1)
        #expect(old.requestKey == nil && old.command == .listRooms(after: "", limit: 5))
    }
}
