import Foundation

/// The nonces each app used within the signing window, so a captured request cannot be replayed.
///
/// Memory is bounded: only requests whose checksum verified are recorded (a forger cannot fill it), entries
/// older than the window are dropped, and an app may hold at most `perAppLimit` live nonces; beyond that its
/// requests are refused (`tooManyRequests`) rather than letting a replay through. Per node: a replay sent to
/// another node within the window is not caught (documented in docs/api.md).
public final class NonceLedger: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String: [String: Int64]] = [:]
    private let window: Int64
    public let perAppLimit: Int

    public init(window: Int64 = RequestSignature.window, perAppLimit: Int = 100_000) {
        self.window = window
        self.perAppLimit = perAppLimit
    }

    /// Records `nonce` for `appKey` at `now` (seconds); refuses one already seen in the window.
    public func record(appKey: String, nonce: String, now: Int64) throws {
        let outcome: APIErrorCode? = lock.withLock {
            var nonces = seen[appKey] ?? [:]
            if let at = nonces[nonce], now - at <= window { return .reusedNonce }
            if nonces.count >= perAppLimit { nonces = nonces.filter { now - $0.value <= window } }
            guard nonces.count < perAppLimit else { return .tooManyRequests }
            nonces[nonce] = now
            seen[appKey] = nonces
            return nil
        }
        switch outcome {
        case .reusedNonce?: throw APIError(.reusedNonce, "this Nonce was already used within \(window) s")
        case .some(let code): throw APIError(code, "too many requests for this app within \(window) s")
        case nil: return
        }
    }

    /// Live nonces of an app (tests).
    public func count(appKey: String) -> Int { lock.withLock { seen[appKey]?.count ?? 0 } }
}
