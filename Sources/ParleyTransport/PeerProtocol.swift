/// Issue 18: the version of what nodes say to each other, so nodes of adjacent releases run side by side
/// during a rolling upgrade. Every stream a node opens carries `parley-peer-version` (its version); the node
/// accepting it answers with its own. A node that sent none is version 1 (before the header existed).
/// A stream from a version this node cannot talk to is refused (426) with the versions in the answer, and
/// the refusing side logs it; a feature that writes something older nodes cannot read (a new replicated
/// command) is used only once every node of the cluster said it reads it (`PeerTransport.everyPeerHas`).
///
/// Versions:
/// - 1: Raft batches (`RaftWireCodec` 1), proposal batches, commands up to tag 37.
/// - 2: the header; reads `enter` with `replacing` (command tag 38, the session take-over of C5).
/// - 3: reads IM commands (shard command tag 200, issue 19) and their answers, serves `/rpc/v1/im/propose`,
///   and sends IM events after a feed page's room events (only when a page has some).
/// - 4: reads the meta commands `createApp` (an app with its signing rule, tag 11) and `claimNonce` (tag 12),
///   issue 33 (SPEC T2).
/// - 5: reads the IM relay's `screenedEffects` (IM command tag 7: effects screened by the targets'
///   blocklists), issue 33.
/// - 6: reads the meta command `setConnectionBudget` (tag 13) and meta snapshots of version 5 (an app's
///   connection request budget, SPEC A1, issue 35).
/// - 7: reads compact command answers (`ApplyOutcome`'s tag 2: a message's answer carries its ids, not the
///   message again — issue 34); a node answers so only a call whose stream said 7 or more.
/// - 8: reads the meta command `setWebhooks` (tag 14) and meta snapshots of version 6 (an app's webhooks,
///   SPEC W1, issue 36).
/// - 9: a shard leader shows a client's one-to-one and team messages to their app server before it stores
///   them when the app asks for it (`preSend.im`, SPEC W3); an app may ask only once every node does.
/// - 10: reads the shard command `webhook` (tag 201: a shard's webhook outbox, SPEC W2) and shard snapshots of
///   version 2 (with that outbox); shard leaders keep after-event copies only once every node does.
/// - 11: reads IM read receipts (IM command tag 8 `markRead`, the reads `teamReceipts` and `conversations`, the
///   effect `peerRead`, the events `read`) and IM snapshots of version 2 (read positions), issue 38; clients
///   and the server API may use them only once every node does.
/// - 12: reads the room command `setHistoryWindow` (tag 39: the byte bound of a shard's rooms' history
///   windows, SPEC D1) and rooms snapshots of version 6; shard leaders propose it only once every node does.
/// - 13: reads message priorities (SPEC D3: the room command `sendMessage` of tag 40, history items of tag 2,
///   event kinds of tag 11, activities of tag 7) and the meta command `setRoomCeiling` (tag 15) with meta
///   snapshots of version 7; a node proposes a priority other than normal, and the server API sets a ceiling,
///   only once every node does.
/// - 14: reads supergroups (issue 38: the team command `create` of tag 18, IM feed events of tag 3, the IM
///   reads `memberships` (tag 7, answered with tag 8) and `teamLog` (tag 8), team views of tag 7, IM snapshots of
///   version 3); a
///   supergroup is created only once every node does.
/// - 15: reads the IM command `setLogWindow` (tag 9: the byte bound of a shard's IM logs' items in memory,
///   SPEC D1, issue 38 item 5) and IM snapshots of version 4; shard leaders propose it only once every node does.
/// - 16: `/rpc/v1/propose` takes any shard command (a `ShardRequest`: room or IM, issue 34's one road); a node
///   sends IM commands there only once every node does, and to `/rpc/v1/im/propose` in that call's form before.
/// - 17: reads proposals of form 4 (a log entry carries the request as its leader received it: one encoding for
///   the call and the entry, issue 34) and serves `/rpc/v1/meta/request` (the meta group's request in the shards'
///   form, `GroupRequest`); leaders write form 4, and nodes call the meta leader there, only once every node does.
public enum PeerProtocol {
    public static let version = 17
    /// The oldest version this node talks to. Still 1: what versions 2 and 3 write is gated on every node
    /// having them (`Feature`), so an older node in the cluster only holds those features back.
    public static let oldestAccepted = 1
    public static let header = "parley-peer-version"
    /// The one call a join-only stream (a credential for any node) may make.
    public static let joinPath = "/rpc/v1/join"

    /// The version a stream's header names (1 when there is none; nil when it is not a number).
    static func version(fromHeader value: String?) -> Int? {
        guard let value else { return 1 }
        return Int(value)
    }

    /// What a feature needs every node to read.
    public enum Feature: Sendable {
        /// `enter` replacing a session (C5 hand-off from a draining edge), command tag 38.
        case sessionTakeOver
        /// IM commands in shard logs (tag 200).
        case im
        /// Meta commands `createApp` and `claimNonce` (SPEC T2: CheckSum2 by default, one call per nonce).
        case appSigning
        /// The IM relay's `screenedEffects` (IM command tag 7).
        case imScreening
        /// The meta command `setConnectionBudget` (tag 13) and meta snapshot version 5.
        case connectionBudgets
        /// Compact command answers (`ApplyOutcome` tag 2), sent only to a caller whose stream said so.
        case compactAnswers
        /// The meta command `setWebhooks` (tag 14) and meta snapshot version 6.
        case webhooks
        /// Leaders that check IM messages with the app server (`preSend.im`): an older one would store them
        /// unchecked.
        case imPreSend
        /// The shard command `webhook` (tag 201) and shard snapshot version 2: after-event copies (W2).
        case webhookCopies
        /// IM read receipts (IM command tag 8, its reads, effect and events) and IM snapshot version 2.
        case readReceipts
        /// The room command `setHistoryWindow` (tag 39) and rooms snapshot version 6 (SPEC D1).
        case historyWindow
        /// Message priorities and rooms' delivered-rate ceilings (SPEC D3).
        case messagePriority
        /// Supergroups (issue 38).
        case superTeams
        /// The IM command `setLogWindow` (tag 9) and IM snapshot version 4 (SPEC D1, issue 38 item 5).
        case imLogWindow
        /// `/rpc/v1/propose` reads IM commands as well as room commands (issue 34).
        case shardRequests
        /// Proposals of form 4 and `/rpc/v1/meta/request` (issue 34: one encoding for the call and the entry).
        case requestEntries

        public var version: Int {
            switch self {
            case .requestEntries: 17
            case .shardRequests: 16
            case .imLogWindow: 15
            case .superTeams: 14
            case .messagePriority: 13
            case .historyWindow: 12
            case .readReceipts: 11
            case .webhookCopies: 10
            case .imPreSend: 9
            case .connectionBudgets: 6
            case .compactAnswers: 7
            case .webhooks: 8
            case .sessionTakeOver: 2
            case .im: 3
            case .appSigning: 4
            case .imScreening: 5
            }
        }
    }
}
