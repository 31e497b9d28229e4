import Crypto
import NIOConcurrencyHelpers
import Foundation
import ParleyRaft

/// Authenticates node-to-node streams with the cluster secret (SPEC A3). A stream opens with
/// `x-parley-node: <from>`, `x-parley-time: <unix seconds>`, `x-parley-nonce: <32 hex>` and
/// `x-parley-auth: hex(HMAC-SHA256(key, "parley/2 <from> <to> <path> <time> <nonce>"))`, where `to` is the
/// listener's id. The listener accepts it only for itself, within `window` seconds of its clock, and only
/// once (`PeerTokenCheck` remembers nonces), so a token seen on a cleartext peer network opens nothing:
/// not on another node, not again, not later. The secret never crosses the wire. (Over cleartext h2 this
/// proves membership, not privacy; production runs the peer port with mutual TLS.)
public struct PeerAuth: Sendable {
    private let key: SymmetricKey
    /// How far a token's time may be from the listener's clock, either way (node clocks must agree to
    /// within it: run NTP).
    public static let window: Int64 = 30

    public init(secret: String) {
        // HMAC keys shorter than the hash trip an assertion in debug builds; hashing first gives 32 bytes.
        key = SymmetricKey(data: SHA256.hash(data: Data("parley-cluster-secret:\(secret)".utf8)))
    }

    /// The headers that open a stream from `from` to `to` at `path`: a fresh nonce each time.
    public func headers(from: NodeID, to: NodeID, path: String, now: Int64 = Int64(Date().timeIntervalSince1970))
        -> [(String, String)] {
        let nonce = Self.hex((0..<16).map { _ in UInt8.random(in: 0...255) })
        return [("x-parley-node", "\(from)"), ("x-parley-time", "\(now)"), ("x-parley-nonce", nonce),
                ("x-parley-auth", token(from: from, to: to, path: path, time: now, nonce: nonce))]
    }

    public func token(from: NodeID, to: NodeID, path: String, time: Int64, nonce: String) -> String {
        Self.hex(HMAC<SHA256>.authenticationCode(for: Self.message(from, to, path, time, nonce), using: key))
    }

    /// Whether the MAC is right for these fields (the time and the nonce are `PeerTokenCheck`'s to judge).
    public func verify(from: NodeID, to: NodeID, path: String, time: Int64, nonce: String, token: String) -> Bool {
        guard token.utf8.count == 64, let given = Self.bytes(hex: token) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: Self.message(from, to, path, time, nonce),
                                                      using: key)
    }

    private static func message(_ from: NodeID, _ to: NodeID, _ path: String, _ time: Int64, _ nonce: String) -> Data {
        Data("parley/2 \(from) \(to) \(path) \(time) \(nonce)".utf8)
    }

    /// Hand-rolled hex: String(format:) showed up at 10 % of a node's CPU when tokens were made per call.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in bytes { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 0x0F)]) }
        return String(decoding: out, as: UTF8.self)
    }

    private static func bytes(hex: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8?
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return high == nil ? out : nil
    }
}

/// The listener's side of `PeerAuth`: checks a stream's credentials for this node, the time window and the
/// nonce, remembers the nonces of accepted tokens until their time leaves the window, and says why a
/// token was refused (for the log and `parley_peer_auth_failures_total{reason}`). Nonces are recorded only
/// for tokens whose MAC verified, so a stranger cannot fill the memory; past `capacity` live nonces new
/// streams are refused rather than a nonce forgotten early (a node opens two streams per connection).
public final class PeerTokenCheck: Sendable {
    public enum Refusal: String, Error, Sendable {
        /// No or malformed credential headers.
        case missing
        /// The MAC does not hold: a forgery, another cluster's secret, or a token made for another node.
        case badToken
        /// Its time is more than `PeerAuth.window` from this node's clock (captured earlier, or a clock off).
        case stale
        /// Its nonce was already used (a captured token sent again).
        case replayed
        /// Too many live nonces to remember another.
        case full
    }

    private let auth: PeerAuth
    private let nodeID: NodeID
    private let capacity: Int
    /// nonce → the second after which it may be forgotten.
    private let seen = NIOLockedValueBox<[String: Int64]>([:])
    private let clock: @Sendable () -> Int64

    public init(auth: PeerAuth, nodeID: NodeID, capacity: Int = 100_000,
                clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.auth = auth
        self.nodeID = nodeID
        self.capacity = capacity
        self.clock = clock
    }

    /// The id a joining node addresses a member by before it knows the member's id (`--join HOST:PORT`).
    /// Such a token opens only the join call (`PeerStreamHandler`, `RaftDriver.joinPath`).
    public static let anyNode: NodeID = 0
    /// The scope of join credentials' nonces when the member claims them cluster-wide (`MetaCommand.claimNonce`).
    public static let joinScope = "\u{0}join"

    /// The sender when the stream's headers authenticate it for `path`, else why not. `anyNode`: check a
    /// token made for `PeerTokenCheck.anyNode` instead of this node.
    public func check(path: String, anyNode: Bool = false, header: (String) -> String?) -> Result<NodeID, Refusal> {
        guard let from = header("x-parley-node").flatMap(NodeID.init), from != 0,
              let time = header("x-parley-time").flatMap(Int64.init),
              let nonce = header("x-parley-nonce"), (16...64).contains(nonce.utf8.count),
              let token = header("x-parley-auth") else { return .failure(.missing) }
        // A token made for another node signs another `to`, so it fails here like a forgery.
        guard auth.verify(from: from, to: anyNode ? Self.anyNode : nodeID, path: path, time: time, nonce: nonce,
                          token: token) else {
            return .failure(.badToken)
        }
        let now = clock()
        guard (now - PeerAuth.window ... now + PeerAuth.window).contains(time) else { return .failure(.stale) }
        let keepUntil = max(time, now) + PeerAuth.window
        return seen.withLockedValue { seen -> Result<NodeID, Refusal> in
            if let until = seen[nonce], now <= until { return .failure(.replayed) }
            if seen.count >= capacity { seen = seen.filter { now <= $0.value } }
            guard seen.count < capacity else { return .failure(.full) }
            seen[nonce] = keepUntil
            return .success(from)
        }
    }
}
