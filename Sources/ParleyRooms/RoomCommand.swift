/// One server-side operation on the rooms of a shard; carried in a Raft log entry.
public enum RoomCommand: Sendable, Hashable {
    // Rooms (R1-R4, N4, E7, E3 policy)
    case createRoom(CreateRoom)
    case updateRoom(UpdateRoom)
    /// R2: close (app server); `ext` goes into the kick results.
    case closeRoom(roomId: String, ext: String)
    case reopenRoom(roomId: String)
    case setRoomPolicy(RoomPolicyUpdate)
    /// Sets the policy every namespace without its own follows (written before apps were tenants).
    case setAppPolicy(AppPolicy)
    /// A8: sets the policy of one app's rooms (`AppScope` namespace; "" for the legacy rooms).
    case setScopedAppPolicy(namespace: String, AppPolicy)
    /// A1: the message budgets of an app's rooms in this shard (app server only).
    case setSendBudget(namespace: String, SendBudget)
    /// SPEC D1: the bytes the shard's rooms' recent-history windows hold together (0: no byte bound); the
    /// cluster (the shard's leader) proposes it once every node reads it.
    case setHistoryWindow(bytes: Int)
    case fetchRoomInfo(roomId: String)
    /// The shard's room ids after `after` (exclusive, "" = from the start), sorted, at most `limit`:
    /// how the server API walks every room for a broadcast.
    case listRooms(after: String, limit: Int)
    // Sessions (E1-E3, E7, E10)
    case enter(EnterRoom)
    /// E10: the acting session leaves.
    case exit(roomId: String)
    /// Every session of a dead edge ends, in every room of the shard (and its E3 room slots go).
    case sessionLost(edgeId: String)
    /// E3 across shards, sent to the user's home shard (`RoomSlots.homeKey`): claim a slot before entering a
    /// room anywhere (13101 for the 11th room), release it after leaving.
    /// With the RC one-room policy on, the claim answers the user's other rooms (`roomIds`) instead of
    /// counting to 10; the edge then sends `yieldRoom` to those in other shards.
    case claimRoomSlot(roomId: String)
    case releaseRoomSlot(roomId: String)
    /// E3, RC one-room policy across shards: the acting user's sessions leave this room (kicked, reason 3, and
    /// a multi-login sync leave with reason 2) because they entered another room. Refused when the policy is off.
    case yieldRoom(roomId: String)
    // Messages (N1, N5)
    case sendMessage(SendMessage)
    case fetchHistory(HistoryQuery)
    /// X2: history items with seq > afterSeq, oldest first (a reconnecting client's resume).
    case historySince(roomId: String, afterSeq: UInt64, limit: Int)
    // Members (M2-M9, R5, R6)
    case fetchMembers(FetchMembers)
    case fetchMembersByIds(RoomUsers)
    case updateMyMemberInfo(UpdateMyMemberInfo)
    case markManager(MemberUpdate)
    case markCommon(MemberUpdate)
    case setBlocked(MemberUpdate)
    case setMuted(MemberUpdate)
    case setTempMute(MemberUpdate)
    case kick(MemberUpdate)
    case setRoomMute(RoomSwitch)
    case updateAllowlist(RoomSwitch)
    case setGlobalMute(GlobalMute)
    // Queue (Q1-Q7)
    case queueInit(roomId: String, maxSize: Int)
    case queueOffer(QueueOffer)
    case queueBatchUpdate(QueueBatchUpdate)
    /// Q5: remove by key, or the head when the key is empty.
    case queuePoll(roomId: String, key: String)
    case queueList(roomId: String)
    case queueDrop(roomId: String)

    /// The room a command is about (nil for those about the shard: policies, listings, lost edges, global
    /// mutes); its namespace chooses the app policy the command runs under.
    public var roomId: String? {
        switch self {
        case .createRoom(let c): c.roomId
        case .updateRoom(let u): u.roomId
        case .closeRoom(let id, _), .reopenRoom(let id), .fetchRoomInfo(let id), .exit(let id), .claimRoomSlot(let id),
             .releaseRoomSlot(let id), .yieldRoom(let id), .historySince(let id, _, _), .queueInit(let id, _),
             .queuePoll(let id, _), .queueList(let id), .queueDrop(let id):
            id
        case .setRoomPolicy(let p): p.roomId
        case .enter(let e): e.roomId
        case .sendMessage(let m): m.roomId
        case .fetchHistory(let q): q.roomId
        case .fetchMembers(let f): f.roomId
        case .fetchMembersByIds(let u): u.roomId
        case .updateMyMemberInfo(let u): u.roomId
        case .markManager(let u), .markCommon(let u), .setBlocked(let u), .setMuted(let u), .setTempMute(let u),
             .kick(let u):
            u.roomId
        case .setRoomMute(let s), .updateAllowlist(let s): s.roomId
        case .queueOffer(let o): o.roomId
        case .queueBatchUpdate(let b): b.roomId
        case .setAppPolicy, .setScopedAppPolicy, .setSendBudget, .setHistoryWindow, .listRooms, .sessionLost,
             .setGlobalMute: nil
        }
    }

    /// Read-only commands go through apply for linearizability but never change state.
    public var isReadOnly: Bool {
        switch self {
        case .fetchRoomInfo, .listRooms, .fetchMembers, .fetchMembersByIds, .queueList, .fetchHistory, .historySince: return true
        default: return false
        }
    }
}
