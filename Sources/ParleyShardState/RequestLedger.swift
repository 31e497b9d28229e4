import ParleyWire

/// SPEC A7: what makes one command of a signed server-API request unique in the cluster — the app key, the
/// nonce and which of the request's commands it is (`app␟nonce#target#n`) — and the entry time (ms) until
/// which a replay of the request could still pass a node's signature window.
public struct RequestKey: Sendable, Hashable, BinaryCodable {
    public var id: String
    public var expiresAt: Int64

    public init(id: String, expiresAt: Int64) {
        self.id = id
        self.expiresAt = expiresAt
    }

    /// Node clocks may disagree by this much (as for peer credentials, docs/operations.md).
    public static let clockSkewMillis: Int64 = 30_000

    /// The entry time (ms) until which a credential signed at `signedAt` (Unix seconds), seen at `now`, could
    /// still pass a node's `window` (seconds): the key must be remembered that long.
    public static func expiry(signedAt: Int64, now: Int64, window: Int64) -> Int64 {
        (max(signedAt, now) + window) * 1000 + clockSkewMillis
    }

    /// The app the key belongs to (what the ledger bounds).
    public var app: String { String(id.prefix { $0 != "\u{1F}" }) }

    public func encode(to w: inout ByteWriter) {
        w.write(id)
        w.write(expiresAt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        id = try r.readString()
        expiresAt = try r.readInt64()
    }
}

/// The request keys a group applied, each until it expires (entry time, never a clock): part of the
/// replicated state, kept in the group's snapshots, so every replica — and a leader elected later, or a
/// replica restored from a snapshot — refuses the same replays.
public struct RequestLedger: Sendable, Equatable {
    public enum Verdict: Equatable { case fresh, replayed, full }

    /// Keys one app may hold in one group at once: 100,000 in a 5-minute window is over 300 signed writes a
    /// second to one shard; beyond it a write is refused (10429) rather than the guarantee weakened.
    public static let maxPerApp = 100_000
    /// How often (entry time) expired keys are dropped.
    static let purgeEveryMillis: Int64 = 10_000

    private(set) var expiries: [String: Int64] = [:]
    private var perApp: [String: Int] = [:]
    private var purgedAt: Int64 = 0

    /// Records `key` at entry time `now` unless it is already held (a replay) or its app's share is full.
    public mutating func admit(_ key: RequestKey, now: Int64) -> Verdict {
        purgeIfDue(now)
        if let held = expiries[key.id] {
            if held >= now { return .replayed }
            expiries[key.id] = key.expiresAt  // expired, not yet purged: counted already
            return .fresh
        }
        let app = key.app
        guard perApp[app, default: 0] < Self.maxPerApp else { return .full }
        expiries[key.id] = key.expiresAt
        perApp[app, default: 0] += 1
        return .fresh
    }

    private mutating func purgeIfDue(_ now: Int64) {
        guard now >= purgedAt + Self.purgeEveryMillis else { return }
        purgedAt = now
        // Which keys survive does not depend on the dictionary's order; the counts are sums.
        expiries = expiries.filter { $0.value >= now }
        perApp = [:]
        for id in expiries.keys { perApp[RequestKey(id: id, expiresAt: 0).app, default: 0] += 1 }
    }

    public func encode(to w: inout ByteWriter) {
        w.write(purgedAt)
        w.write(UInt64(expiries.count))
        for id in expiries.keys.sorted() {
            w.write(id)
            w.write(expiries[id]!)
        }
    }

    public init() {}

    public init(from r: inout ByteReader) throws(CodecError) {
        purgedAt = try r.readInt64()
        for _ in 0..<(try r.readCount()) {
            let id = try r.readString()
            expiries[id] = try r.readInt64()
            perApp[RequestKey(id: id, expiresAt: 0).app, default: 0] += 1
        }
    }

    public static func == (a: RequestLedger, b: RequestLedger) -> Bool { a.expiries == b.expiries && a.purgedAt == b.purgedAt }
}
