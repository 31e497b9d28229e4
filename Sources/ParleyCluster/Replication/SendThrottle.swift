import ParleyRooms

/// A token bucket on the wall clock (milliseconds): `rate` tokens a second, at most `burst` held.
public struct TokenBucket: Sendable {
    private var tokens: Double
    private var last: Int64

    public init(burst: Int, now: Int64) {
        tokens = Double(burst)
        last = now
    }

    /// Takes a token, or says how many milliseconds until one is there.
    public mutating func take(rate: Int, burst: Int, now: Int64) -> Int64? {
        tokens = min(Double(burst), tokens + Double(max(0, now - last)) * Double(rate) / 1000)
        last = max(last, now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return Int64(((1 - tokens) * 1000 / Double(rate)).rounded(.up))
    }

    var idleSince: Int64 { last }
}

/// SPEC A1 on a shard leader: the message budgets of its rooms' senders (`SendBudget`), decided before a
/// client's message is proposed. Not replicated: a new leader starts with full buckets, which at worst lets
/// one burst more through. Touched only on the driver's loop.
final class SendThrottle {
    private var rooms: [String: TokenBucket] = [:]
    private var users: [String: TokenBucket] = [:]
    /// Buckets idle this long are full again anyway: dropped, so memory follows the active senders.
    static let idleMillis: Int64 = 60_000

    /// nil: the message may be proposed; else the milliseconds after which the sender may try again. The
    /// user's own bucket is charged only when the room has room, so a refused send costs the user nothing.
    func admit(roomId: String, userId: String, budget: SendBudget, now: Int64) -> Int64? {
        let userKey = roomId + "\u{1F}" + userId
        var user = users[userKey] ?? TokenBucket(burst: budget.userBurst, now: now)
        var probe = user
        if let wait = probe.take(rate: budget.userMessagesPerSecond, burst: budget.userBurst, now: now) {
            users[userKey] = probe
            return wait
        }
        var room = rooms[roomId] ?? TokenBucket(burst: budget.roomBurst, now: now)
        if let wait = room.take(rate: budget.roomMessagesPerSecond, burst: budget.roomBurst, now: now) {
            rooms[roomId] = room
            users[userKey] = user
            return wait
        }
        user = probe
        rooms[roomId] = room
        users[userKey] = user
        return nil
    }

    func dropIdle(now: Int64) {
        rooms = rooms.filter { now - $0.value.idleSince < Self.idleMillis }
        users = users.filter { now - $0.value.idleSince < Self.idleMillis }
    }

    var count: Int { rooms.count + users.count }
}
