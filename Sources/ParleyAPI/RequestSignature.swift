import Crypto
import Foundation

/// NIM-style request signing: the headers AppKey, Nonce, CurTime (Unix seconds) and
/// CheckSum = lowercase hex SHA1(AppSecret + Nonce + CurTime).
public struct RequestSignature: Sendable, Equatable {
    public var appKey: String
    public var nonce: String
    public var curTime: Int64
    public var checkSum: String

    /// How far CurTime may be from the node's clock, either way; nonces are remembered this long.
    public static let window: Int64 = 300
    public static let maxNonceBytes = 128

    public init(appKey: String, nonce: String, curTime: Int64, checkSum: String) {
        self.appKey = appKey
        self.nonce = nonce
        self.curTime = curTime
        self.checkSum = checkSum
    }

    /// Reads the four headers; a missing, empty or malformed one is a `missingSignature` refusal.
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
        guard let sum = header("CheckSum"), sum.utf8.count == 40 else {
            throw APIError(.missingSignature, "the CheckSum header is missing or not 40 hex digits")
        }
        self.init(appKey: appKey, nonce: nonce, curTime: curTime, checkSum: sum.lowercased())
    }

    public static func checkSum(secret: String, nonce: String, curTime: Int64) -> String {
        let digest = Insecure.SHA1.hash(data: Data((secret + nonce + String(curTime)).utf8))
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// Checks the time window and the checksum (in constant time, so a forger learns nothing from timing).
    public func verify(secret: String, now: Int64) throws {
        // Compared as a range, not |now - curTime|: a forged CurTime near Int64.min must not overflow.
        guard (now - Self.window ... now + Self.window).contains(curTime) else {
            throw APIError(.staleCurTime, "CurTime is more than \(Self.window) s from the server's clock")
        }
        let expected = Array(Self.checkSum(secret: secret, nonce: nonce, curTime: curTime).utf8)
        let given = Array(checkSum.utf8)
        var diff: UInt8 = expected.count == given.count ? 0 : 1
        for i in 0..<min(expected.count, given.count) { diff |= expected[i] ^ given[i] }
        guard diff == 0 else { throw APIError(.badChecksum, "CheckSum does not match SHA1(AppSecret + Nonce + CurTime)") }
    }

    /// Headers for a signed request (tests, tools, the curl example).
    public static func headers(appKey: String, secret: String, nonce: String, curTime: Int64) -> [String: String] {
        ["AppKey": appKey, "Nonce": nonce, "CurTime": String(curTime),
         "CheckSum": checkSum(secret: secret, nonce: nonce, curTime: curTime)]
    }
}
