/// One room's sequence bookkeeping (X2): which room events the app has seen, where a re-enter resumes, and
/// which events are duplicates. Pure so the rules are tested without a network.
///
/// Two numbers are kept because they answer different questions. `lastSeq` is the highest room seq the app
/// was given: anything at or below it is a duplicate. `enterSeq` is the room's seq in the answer to a fresh
/// (not resumed) enter: everything up to it happened before the session existed, so a re-enter need not
/// replay it even when no event has arrived yet. It is not used for dropping because the enter's own 301 may
/// carry exactly that seq and must still be delivered.
public struct ResumeLedger: Sendable, Hashable {
    public private(set) var lastSeq: Int64 = 0
    public private(set) var enterSeq: Int64 = 0

    public init() {}

    /// The `lastSeq` a re-enter sends: the server replays what came after it.
    public var resumePoint: Int64 { max(lastSeq, enterSeq) }

    /// Records an enter answer and returns the range the app can no longer get by replay, if any.
    /// A resumed answer changes nothing: the replay continues from `resumePoint`, and moving it to the
    /// answer's room seq would skip replayed items still in flight if the link dropped again.
    /// `replayFromSeq`: where the server's replay starts when the gap was wider than it replays (the newest
    /// items still come, so only what lies before them is lost).
    public mutating func entered(roomSeq: Int64, resumed: Bool, gapTooOld: Bool, replayFromSeq: Int64? = nil,
                                 reentered: Bool) -> ClosedRange<Int64>? {
        if resumed { return nil }
        var lost: ClosedRange<Int64>?
        let lostThrough = min(roomSeq, (replayFromSeq ?? roomSeq + 1) - 1)
        if reentered, gapTooOld, lostThrough > resumePoint { lost = (resumePoint + 1)...lostThrough }
        enterSeq = max(enterSeq, roomSeq)
        return lost
    }

    /// Whether a room event is new. Events with seq 0 are addressed to a user or session, outside the room's
    /// numbering, and always pass.
    public mutating func admit(seq: Int64) -> Bool {
        if seq == 0 { return true }
        if seq <= lastSeq { return false }
        lastSeq = seq
        return true
    }

    /// A `gap` event: the range will never come, so later events are not waited for and a re-enter does not
    /// ask for it again.
    public mutating func skip(through seq: Int64) {
        lastSeq = max(lastSeq, seq)
    }
}
