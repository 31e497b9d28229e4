import Collections

/// SPEC D1: the rooms' recent-history windows of a shard bounded by bytes, all together. Past
/// `historyWindowBytes` the oldest item of the shard (by time, then room id, then seq) leaves memory; every
/// item stays in the node's durable history store, so reads past the window are still answered from there.
///
/// The bound is replicated state (set by `setHistoryWindow`, which the shard's leader proposes once every node
/// reads it), and which item goes is a function of the state alone: the heap of window heads is derived, so a
/// replica restored from a snapshot drops exactly what one that applied every entry drops. A resend is
/// recognized while its original is in the window, on every replica alike.
struct WindowHead: Comparable, Sendable {
    var time: Int64
    var roomId: String
    var seq: UInt64

    static func < (a: WindowHead, b: WindowHead) -> Bool {
        (a.time, a.roomId, a.seq) < (b.time, b.roomId, b.seq)
    }
}

extension RoomsState {
    /// The estimated bytes of every room's window (`HistoryItem.estimatedBytes`).
    public var windowBytes: Int { window.bytes }

    /// Accounts for what a command did to the windows, then drops the shard's oldest items while the bound
    /// is passed.
    mutating func settleWindows(_ fx: ApplyEffects) {
        window.bytes += fx.windowBytes
        guard historyWindowBytes > 0 else { return }
        for roomId in fx.newWindowHeads { pushHead(of: roomId) }
        while window.bytes > historyWindowBytes, let top = window.heads.popMin() {
            guard let i = rooms.slot(of: top.roomId), let first = rooms[slot: i].history.first,
                  first.seq == top.seq, first.time == top.time else { continue }  // stale: that head left before
            window.bytes -= rooms[slot: i].dropOldest(first)
            pushHead(of: top.roomId)
        }
        // Heads replaced by a room's own drops (retention, count) stay in the heap until popped.
        if window.heads.count > 2 * rooms.count + 1_024 { rebuildHeads() }
    }

    /// Sets the bound (0: none) and applies it at once.
    mutating func setHistoryWindow(bytes: Int) {
        historyWindowBytes = bytes
        rebuildHeads()
        settleWindows(ApplyEffects())
    }

    /// The derived parts, from the rooms' windows (after a restore, or to shed stale heads).
    mutating func rebuildHeads() {
        window.bytes = rooms.slots.reduce(0) { $0 + $1.historyBytes }
        window.heads = Heap()
        guard historyWindowBytes > 0 else { return }
        window.heads = Heap(rooms.slots.compactMap { room in
            room.history.first.map { WindowHead(time: $0.time, roomId: room.info.roomId, seq: $0.seq) }
        })
    }

    private mutating func pushHead(of roomId: String) {
        guard let i = rooms.slot(of: roomId), let first = rooms[slot: i].history.first else { return }
        window.heads.insert(WindowHead(time: first.time, roomId: roomId, seq: first.seq))
    }
}

/// What `RoomsState` derives about its windows (never in a snapshot).
struct RoomWindows: Sendable {
    var bytes = 0
    var heads = Heap<WindowHead>()
}
