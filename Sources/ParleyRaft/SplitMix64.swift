/// A source of randomness injected into the core (election jitter), so a seed determines a run.
public protocol RaftRandom {
    /// A value in `0..<upperBound` (`upperBound` > 0).
    mutating func next(upperBound: Int) -> Int
}

/// SplitMix64: small, fast, and good enough for election jitter; fully determined by its seed.
public struct SplitMix64: RaftRandom, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func nextUInt64() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func next(upperBound: Int) -> Int {
        precondition(upperBound > 0, "upper bound must be positive")
        return Int(nextUInt64() % UInt64(upperBound))
    }
}
