import Crypto
import Foundation

/// Request signing for the server API, in two forms (docs/api.md, "Signing"):
/// - NIM's: the headers AppKey, Nonce, CurTime (Unix seconds) and CheckSum = lowercase hex
///   SHA1(AppSecret + Nonce + CurTime). It covers neither the path nor the body, so captured headers could
///   carry another call; kept for compatibility.
/// - `CheckSum2` = lowercase hex HMAC-SHA256(key: AppSecret, `parley-v2\n` METHOD `\n` PATH `\n` Nonce `\n`
///   CurTime `\n` hex SHA256(body)): the same headers then sign what the request does. The SDK, the docs
///   and the tools use it; an app can require it (`/v1/app/setSigning`), and then CheckSum alone is refused.
/// A request carries CheckSum, CheckSum2 or both; every one it carries must match.
public struct RequestSignature: Sendable, Equatable {
    public var appKey: String
    public var nonce: String
    public var curTime: Int64
    public var checkSum: String?
    public var checkSum2: String?

    /// How far CurTime may be from the node's clock, either way. A nonce is remembered until its CurTime
    /// leaves that window (`NonceLedger`).
    public static let window: Int64 = 300
    public static let maxNonceBytes = 128

    public init(appKey: String, nonce: String, curTime: Int64, checkSum: String? = nil, checkSum2: String? = nil) {
        self.appKey = appKey
        self.nonce = nonce
        self.curTime = curTime
        self.checkSum = checkSum
        self.checkSum2 = checkSum2
    }

    /// Reads the headers; a missing, empty or malformed one is a `missingSignature` refusal.
    public init(header: (String) -> String?) throws {
        guard let appKey = header("AppKey"), !appKey.isEmpty, appKey.utf8.count <= 64 else {
            throw APIError(.missingSignature, "the AppKey header is missing")
        }
        guard let nonce = header("Nonce"), (1...Self.maxNonceBytes).contains(nonce.utf8.count) else {
            throw APIError(.missingSignature, "the Nonce header is missing or longer than \(Self.maxNonceBytes) bytes")
        }
        guard let time = header("CurTime"), let curTime = Int64(time) else {
            throw APIError(.missingSignature, "the CurTime header is missing or not a number of seconds")
        }
        let sum = header("CheckSum"), sum2 = header("CheckSum2")
        guard sum != nil || sum2 != nil else {
            throw APIError(.missingSignature, "the CheckSum2 (or NIM's CheckSum) header is missing")
        }
        if let sum, sum.utf8.count != 40 {
            throw APIError(.missingSignature, "the CheckSum header is not 40 hex digits")
        }
        if let sum2, sum2.utf8.count != 64 {
            throw APIError(.missingSignature, "the CheckSum2 header is not 64 hex digits")
        }
        self.init(appKey: appKey, nonce: nonce, curTime: curTime, checkSum: sum?.lowercased(), checkSum2: sum2?.lowercased())
    }

    public static func checkSum(secret: String, nonce: String, curTime: Int64) -> String {
        hex(Insecure.SHA1.hash(data: Data((secret + nonce + String(curTime)).utf8)))
    }

    /// What `CheckSum2` signs: the method, the path, the nonce, the time and the body's digest.
    public static func checkSum2(secret: String, method: String, path: String, nonce: String, curTime: Int64,
                                 body: some DataProtocol) -> String {
        let text = "parley-v2\n\(method.uppercased())\n\(path)\n\(nonce)\n\(curTime)\n\(hex(SHA256.hash(data: body)))"
        return hex(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: Data(secret.utf8))))
    }

    /// What can be checked before the body is read: the time window, NIM's CheckSum if it is there, and
    /// that an app requiring signed bodies got a `CheckSum2`.
    public func verifyHeaders(secret: String, now: Int64, requireSignedBody: Bool = false) throws {
        // Compared as a range, not |now - curTime|: a forged CurTime near Int64.min must not overflow.
        guard (now - Self.window ... now + Self.window).contains(curTime) else {
            throw APIError(.staleCurTime, "CurTime is more than \(Self.window) s from the server's clock")
        }
        if requireSignedBody, checkSum2 == nil {
            throw APIError(.signedBodyRequired, "this app requires CheckSum2 (method, path and body signed)")
        }
        if let checkSum, !Self.same(checkSum, Self.checkSum(secret: secret, nonce: nonce, curTime: curTime)) {
            throw APIError(.badChecksum, "CheckSum does not match SHA1(AppSecret + Nonce + CurTime)")
        }
    }

    /// Checks `CheckSum2`, when the request has one, against the method, path and body it came with.
    public func verifyBody(secret: String, method: String, path: String, body: some DataProtocol) throws {
        guard let checkSum2 else { return }
        let expected = Self.checkSum2(secret: secret, method: method, path: path, nonce: nonce, curTime: curTime, body: body)
        guard Self.same(checkSum2, expected) else {
            throw APIError(.badChecksum, "CheckSum2 does not match this request's method, path, body, Nonce and CurTime")
        }
    }

    /// Both checks, for a request whose body is at hand (tests, tools).
    public func verify(secret: String, now: Int64, method: String = "POST", path: String = "", body: [UInt8] = [],
                       requireSignedBody: Bool = false) throws {
        try verifyHeaders(secret: secret, now: now, requireSignedBody: requireSignedBody)
        try verifyBody(secret: secret, method: method, path: path, body: body)
    }

    /// Headers for a NIM-signed request (CheckSum only).
    public static func headers(appKey: String, secret: String, nonce: String, curTime: Int64) -> [String: String] {
        ["AppKey": appKey, "Nonce": nonce, "CurTime": String(curTime),
         "CheckSum": checkSum(secret: secret, nonce: nonce, curTime: curTime)]
    }

    /// Headers for a request signed with `CheckSum2` (what the SDK, tools and docs send).
    public static func signedHeaders(appKey: String, secret: String, nonce: String, curTime: Int64, method: String = "POST",
                                     path: String, body: some DataProtocol) -> [String: String] {
        ["AppKey": appKey, "Nonce": nonce, "CurTime": String(curTime),
         "CheckSum2": checkSum2(secret: secret, method: method, path: path, nonce: nonce, curTime: curTime, body: body)]
    }

    /// Compares in constant time, so a forger learns nothing from timing.
    private static func same(_ given: String, _ expected: String) -> Bool {
        let a = Array(given.utf8), b = Array(expected.utf8)
        var diff: UInt8 = a.count == b.count ? 0 : 1
        for i in 0..<min(a.count, b.count) { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
