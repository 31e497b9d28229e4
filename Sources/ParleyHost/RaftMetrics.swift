import Metrics
import ParleyRaft
import ParleyRooms

/// What the multi-Raft host counts: proposals, committed entries, elections and leader changes, and the
/// room commands its leader replicas applied by type and result. Owned by one `RaftHost` and touched only
/// on its loop, so the per-(type, result) cache needs no lock. Every metric object is created up front or
/// once per new (type, error code) pair, so the hot path is an atomic add with no string building.
final class RaftMetrics {
    let proposals: Counter
    let committedEntries: Counter
    let electionsStarted: Counter
    let leaderChanges: Counter
    /// Transfers this node asked for as the leader balancer (issue 17), and those a leader here started.
    let balanceTransfersAsked: Counter
    let leadershipTransfersStarted: Counter
    /// Issue 17, replica moves: configuration changes a leader here proposed, replicas created here when a
    /// group added this node, and replicas dropped after a group removed it.
    let membershipChanges: Counter
    let replicasAdded: Counter
    let replicasRemoved: Counter
    /// Moves as the groups' leaders applied them (`ReplicaMoves.Transition`): learners added, promoted, and
    /// removed before they voted.
    let movesStarted: Counter
    let movesDone: Counter
    let movesFailed: Counter
    /// SPEC D1: times a group dropped entries from memory to keep the host's Raft logs within their bound.
    let logMemoryEvictions: Counter
    private let factory: any MetricsFactory
    /// `commandsOK[kind]`: applied without error, one per command type.
    private let commandsOK: [Counter]
    /// Applied with an error, created on the first occurrence of each (type, code).
    private var commandErrors: [Int: Counter] = [:]

    static let commandsName = "parley_room_commands_total"

    init(factory: any MetricsFactory) {
        self.factory = factory
        proposals = Counter(label: "parley_raft_proposals_total", factory: factory)
        committedEntries = Counter(label: "parley_raft_committed_entries_total", factory: factory)
        electionsStarted = Counter(label: "parley_raft_elections_started_total", factory: factory)
        leaderChanges = Counter(label: "parley_raft_leader_changes_total", factory: factory)
        balanceTransfersAsked = Counter(label: "parley_balance_transfers_asked_total", factory: factory)
        leadershipTransfersStarted = Counter(label: "parley_raft_leadership_transfers_total", factory: factory)
        membershipChanges = Counter(label: "parley_moves_conf_changes_total", factory: factory)
        replicasAdded = Counter(label: "parley_moves_replicas_added_total", factory: factory)
        replicasRemoved = Counter(label: "parley_moves_replicas_removed_total", factory: factory)
        movesStarted = Counter(label: "parley_moves_started_total", factory: factory)
        movesDone = Counter(label: "parley_moves_done_total", factory: factory)
        movesFailed = Counter(label: "parley_moves_failed_total", factory: factory)
        logMemoryEvictions = Counter(label: "parley_raft_log_evictions_total", factory: factory)
        commandsOK = RoomCommand.metricNames.map { name in
            Counter(label: Self.commandsName, dimensions: [("type", name), ("result", "ok")], factory: factory)
        }
    }

    /// Counts `group`'s proposals, and the moves its configuration changes make while it leads.
    func watch(_ group: HostedGroup) {
        let proposals = self.proposals, started = movesStarted, done = movesDone, failed = movesFailed
        group.onProposed = { proposals.increment() }
        group.onConfChange = { old, new, leads in
            guard leads else { return }
            let t = ReplicaMoves.Transition(from: old, to: new)
            if !t.started.isEmpty { started.increment(by: t.started.count) }
            if !t.done.isEmpty { done.increment(by: t.done.count) }
            if !t.failed.isEmpty { failed.increment(by: t.failed.count) }
        }
    }

    /// Counts one applied room command.
    func commandApplied(kind: Int, errorCode: RoomErrorCode?) {
        guard let code = errorCode else { return commandsOK[kind].increment() }
        let key = kind << 32 | code.rawValue
        if let counter = commandErrors[key] { return counter.increment() }
        let counter = Counter(label: Self.commandsName,
                              dimensions: [("type", RoomCommand.metricNames[kind]), ("result", "\(code.rawValue)")],
                              factory: factory)
        commandErrors[key] = counter
        counter.increment()
    }
}

extension RoomCommand {
    /// The `type` label of each command, indexed by `metricKind`.
    static let metricNames = [
        "createRoom", "updateRoom", "closeRoom", "reopenRoom", "setRoomPolicy", "setAppPolicy", "fetchRoomInfo",
        "enter", "exit", "sessionLost", "sendMessage", "fetchHistory", "historySince", "fetchMembers",
        "fetchMembersByIds", "updateMyMemberInfo", "markManager", "markCommon", "setBlocked", "setMuted",
        "setTempMute", "kick", "setRoomMute", "updateAllowlist", "setGlobalMute", "queueInit", "queueOffer",
        "queueBatchUpdate", "queuePoll", "queueList", "queueDrop", "claimRoomSlot", "releaseRoomSlot", "listRooms",
        "yieldRoom", "setScopedAppPolicy", "setSendBudget", "setHistoryWindow",
    ]

    /// Index of this command's case in `metricNames` (a switch, so a new case fails to compile here).
    var metricKind: Int {
        switch self {
        case .createRoom: 0
        case .updateRoom: 1
        case .closeRoom: 2
        case .reopenRoom: 3
        case .setRoomPolicy: 4
        case .setAppPolicy: 5
        case .fetchRoomInfo: 6
        case .enter: 7
        case .exit: 8
        case .sessionLost: 9
        case .sendMessage: 10
        case .fetchHistory: 11
        case .historySince: 12
        case .fetchMembers: 13
        case .fetchMembersByIds: 14
        case .updateMyMemberInfo: 15
        case .markManager: 16
        case .markCommon: 17
        case .setBlocked: 18
        case .setMuted: 19
        case .setTempMute: 20
        case .kick: 21
        case .setRoomMute: 22
        case .updateAllowlist: 23
        case .setGlobalMute: 24
        case .queueInit: 25
        case .queueOffer: 26
        case .queueBatchUpdate: 27
        case .queuePoll: 28
        case .queueList: 29
        case .queueDrop: 30
        case .claimRoomSlot: 31
        case .releaseRoomSlot: 32
        case .listRooms: 33
        case .yieldRoom: 34
        case .setScopedAppPolicy: 35
        case .setSendBudget: 36
        case .setHistoryWindow: 37
        }
    }
}
