import Testing
@testable import ParleyRaft

/// Issue 35: `RaftConfig.deferCommitNotice` — a leader's new commit index rides on the next append (or
/// heartbeat), or goes when the host asks for it, instead of an append of its own to every follower.
@Suite struct CommitNoticeTests {
    static func network(deferred: Bool) throws -> TestNetwork {
        let net = try TestNetwork(voters: [1, 2, 3]) { $0.deferCommitNotice = deferred }
        net.campaign(1)
        net.deliverAll()
        net.node(1).sendCommit()  // the leader's first entry, told
        net.deliverAll()
        return net
    }

    /// The network once payload 1 is proposed and every message delivered, with the count of messages sent before.
    static func firstPayloadCommitted(deferred: Bool) throws -> (TestNetwork, mark: Int) {
        let net = try network(deferred: deferred)
        let mark = net.sent.count
        try net.node(1).propose(payload(1))
        net.deliverAll()
        return (net, mark)
    }

    /// Appends the leader sent with no entries since `mark` messages were sent: commit notices alone.
    static func emptyAppends(_ net: TestNetwork, since mark: Int) -> Int {
        net.sent[mark...].filter { $0.kind == .append && $0.from == 1 && $0.entries.isEmpty }.count
    }

    @Test("DESIGN-I1 (issue 35): a deferred commit sends no append of its own; the host's call tells the followers")
    func deferredCommitWaitsForTheHost() throws {
        let (net, mark) = try Self.firstPayloadCommitted(deferred: true)
        let committed = net.commit(1)
        #expect(net.applied[1]!.last == payload(1))
        #expect(Self.emptyAppends(net, since: mark) == 0)
        for follower: NodeID in [2, 3] {
            #expect(net.commit(follower) < committed)
            #expect(net.applied[follower]!.last != payload(1))
        }
        #expect(net.node(1).unsentCommit == committed)
        #expect(net.node(2).unsentCommit == nil)  // a follower has none to send

        net.node(1).sendCommit()
        net.deliverAll()
        #expect(Self.emptyAppends(net, since: mark) == 2)
        for follower: NodeID in [2, 3] {
            #expect(net.commit(follower) == committed)
            #expect(net.applied[follower]!.last == payload(1))
        }
        #expect(net.node(1).unsentCommit == nil)
    }

    @Test("DESIGN-I1 (issue 35): the next append carries a deferred commit, and the host's call then sends nothing")
    func nextAppendCarriesTheCommit() throws {
        let (net, _) = try Self.firstPayloadCommitted(deferred: true)
        let first = net.commit(1)
        #expect(net.node(1).unsentCommit == first)
        try net.node(1).propose(payload(2))
        net.handleAllReady()  // the append of payload 2 leaves, carrying the commit of payload 1
        #expect(net.node(1).unsentCommit == nil)
        let mark = net.sent.count
        net.node(1).sendCommit()
        net.handleAllReady()
        #expect(net.sent.count == mark)
        net.deliverAll()
        for follower: NodeID in [2, 3] {
            #expect(net.commit(follower) >= first)
            #expect(net.applied[follower]!.contains(payload(1)))
        }
    }

    @Test("DESIGN-I1 (issue 35): a notice asked for while new proposals wait for the Ready's broadcast is left to it")
    func noticeLeftToThePendingBroadcast() throws {
        let (net, _) = try Self.firstPayloadCommitted(deferred: true)
        #expect(net.node(1).unsentCommit != nil)
        try net.node(1).propose(payload(2))
        let mark = net.sent.count
        net.node(1).sendCommit()
        net.handleAllReady()
        let appends = net.sent[mark...].filter { $0.kind == .append && $0.from == 1 }
        #expect(appends.count == 2)  // one per follower, with the new entry and the commit index
        #expect(appends.allSatisfy { !$0.entries.isEmpty && $0.commit == net.commit(1) })
        #expect(net.node(1).unsentCommit == nil)
    }

    @Test("DESIGN-I1 (issue 35): a heartbeat carries a deferred commit too")
    func heartbeatCarriesTheCommit() throws {
        let (net, _) = try Self.firstPayloadCommitted(deferred: true)
        let committed = net.commit(1)
        #expect(net.commit(2) < committed)
        net.tickAll(1)  // heartbeatTick 1
        net.deliverAll()
        #expect(net.commit(2) == committed && net.commit(3) == committed)
        #expect(net.node(1).unsentCommit == nil)
    }

    @Test("DESIGN-I1: without it a commit is sent to every follower at once (etcd's rule)")
    func immediateCommitNotice() throws {
        let (net, mark) = try Self.firstPayloadCommitted(deferred: false)
        #expect(Self.emptyAppends(net, since: mark) == 2)
        for follower: NodeID in [2, 3] { #expect(net.applied[follower]!.last == payload(1)) }
        #expect(net.node(1).unsentCommit == nil)
    }
}
