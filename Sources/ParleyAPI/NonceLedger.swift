import Foundation

/// The nonces each app used while their CurTime is acceptable, so a captured request cannot be replayed.
///
/// A nonce is kept until its request's CurTime leaves the signing window (CurTime + window, and never less
/// than the window after it arrived): a CurTime of now + 295 s is accepted for 595 s, so its nonce is kept
/// that long (keeping it for the window after arrival let a replay through at 303 s). Memory is bounded:
/// only requests whose checksum verified are recorded (a forger cannot fill it), expired entries are
/// dropped, and an app may hold at most `perAppLimit` live nonces; beyond that its requests are refused
/// (`tooManyRequests`) rather than letting a replay through. Per node: a replay sent to another node
/// within the window is not caught here (docs/api.md; CheckSum2 stops it carrying another call).
public final class NonceLedger: @unchecked Sendable {
    private let lock = NSLock()
    /// app → nonce → the second after which it may be forgotten.
    private var seen: [String: [String: Int64]] = [:]
    private let window: Int64
    public let perAppLimit: Int

    public init(window: Int64 = RequestSignature.window, perAppLimit: Int = 100_000) {
        self.window = window
        self.perAppLimit = perAppLimit
    }

    /// Records `nonce` for `appKey` at `now` (seconds), for a request signed at `curTime`; refuses one that
    /// is still remembered.
    public func record(appKey: String, nonce: String, curTime: Int64, now: Int64) throws {
        let keepUntil = max(curTime, now) + window
        let outcome: APIErrorCode? = lock.withLock {
            var nonces = seen[appKey] ?? [:]
            if let until = nonces[nonce], now <= until { return .reusedNonce }
            if nonces.count >= perAppLimit { nonces = nonces.filter { now <= $0.value } }
            guard nonces.count < perAppLimit else { return .tooManyRequests }
            nonces[nonce] = keepUntil
            seen[appKey] = nonces
            return nil
        }
        switch outcome {
        case .reusedNonce?: throw APIError(.reusedNonce, "this Nonce was already used while its CurTime is acceptable")
        case .some(let code): throw APIError(code, "too many requests for this app within \(window) s")
        case nil: return
        }
    }

    /// Live nonces of an app (tests).
    public func count(appKey: String) -> Int { lock.withLock { seen[appKey]?.count ?? 0 } }
}
