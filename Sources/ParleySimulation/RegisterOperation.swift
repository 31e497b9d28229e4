/// The client workload the simulator drives and the checker judges: one register per key,
/// read and written by clients (a key-value store seen one key at a time).
public typealias RegisterKey = Int
/// Values written to registers; the simulator writes each value at most once so a read names its write.
public typealias RegisterValue = Int

/// What a client asked for.
public enum RegisterInput: Hashable, Sendable, CustomStringConvertible {
    /// Overwrite the register.
    case put(key: RegisterKey, value: RegisterValue)
    /// Read the register; `nil` means it was never written.
    case get(key: RegisterKey)
    /// Compare-and-set: write `new` only when the register holds `expected`.
    case cas(key: RegisterKey, expected: RegisterValue?, new: RegisterValue)

    /// The register the operation touches (histories are checked one key at a time).
    public var key: RegisterKey {
        switch self {
        case .put(let key, _), .get(let key), .cas(let key, _, _): key
        }
    }

    public var description: String {
        switch self {
        case .put(let key, let value): "put(k\(key), \(value))"
        case .get(let key): "get(k\(key))"
        case .cas(let key, let expected, let new): "cas(k\(key), \(expected.map(String.init) ?? "nil")→\(new))"
        }
    }
}

/// What the client was told.
public enum RegisterOutput: Hashable, Sendable, CustomStringConvertible {
    /// A put took effect.
    case written
    /// A get returned this value (`nil`: never written).
    case value(RegisterValue?)
    /// A cas swapped (`true`) or found another value (`false`).
    case swapped(Bool)

    public var description: String {
        switch self {
        case .written: "ok"
        case .value(let value): value.map(String.init) ?? "nil"
        case .swapped(let done): done ? "swapped" : "unchanged"
        }
    }
}

/// One register: the sequential specification every history is compared against.
public enum RegisterModel {
    /// Applies `input` to `state`; returns the new state, or nil when `output` cannot follow from `state`.
    /// An unknown output (`nil`) accepts whatever the operation would have returned.
    public static func step(_ state: RegisterValue?, _ input: RegisterInput, _ output: RegisterOutput?)
        -> RegisterValue?? {
        switch input {
        case .put(_, let value):
            guard output == nil || output == .written else { return nil }
            return .some(value)
        case .get:
            guard let output else { return .some(state) }
            return output == .value(state) ? .some(state) : nil
        case .cas(_, let expected, let new):
            let swaps = state == expected
            if let output, output != .swapped(swaps) { return nil }
            return .some(swaps ? new : state)
        }
    }
}
