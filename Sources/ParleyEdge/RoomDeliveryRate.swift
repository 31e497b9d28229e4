import ParleyRooms

/// SPEC D3: one room's messages delivered by this edge against its app's ceiling (messages a second): a bucket
/// holding one second's worth. High always passes and counts (it may take the bucket below zero, down to minus
/// a second's worth, so a flood of high holds normal and low back); normal needs a whole token; low needs the
/// bucket at least half full, so low goes first when the room speaks faster than its ceiling. Time is the
/// messages' own (their log entry's, ms): when the edge reads its feed late, a page of messages sent a second
/// apart is still a second apart, not a burst, and edges that saw the same messages shed the same ones.
struct RoomDeliveryRate {
    private var tokens = -Double.infinity  // full at the first message
    private var last: UInt64 = 0

    mutating func admits(_ priority: MessagePriority, ceiling: Int, nowNanoseconds now: UInt64) -> Bool {
        let perSecond = Double(ceiling)
        let elapsed = now > last ? now - last : 0  // a message stamped earlier than the last one refills nothing
        tokens = tokens == -.infinity ? perSecond : min(perSecond, tokens + Double(elapsed) / 1e9 * perSecond)
        last = max(last, now)
        switch priority {
        case .high:
            tokens = max(-perSecond, tokens - 1)
            return true
        case .normal:
            guard tokens >= 1 else { return false }
        case .low:
            guard tokens >= max(1, perSecond / 2) else { return false }
        }
        tokens -= 1
        return true
    }
}
