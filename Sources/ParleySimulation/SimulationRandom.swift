import ParleyRaft

/// The simulator's one source of randomness: a seed fully determines a run. The bits come from the
/// project's SplitMix64 (ParleyRaft); this type adds the draws the simulator needs.
public struct SimulationRandom: Sendable {
    private var generator: SplitMix64

    public init(seed: UInt64) {
        generator = SplitMix64(seed: seed)
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 { generator.nextUInt64() }

    /// Uniform in 0..<bound (bound > 0).
    public mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(next() % UInt64(bound))
    }

    /// Uniform in the closed range.
    public mutating func within(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.count)
    }

    /// True with the given probability in [0, 1].
    public mutating func chance(_ probability: Double) -> Bool {
        Double(next() >> 11) / Double(1 << 53) < probability
    }

    /// One element of a non-empty array.
    public mutating func pick<T>(_ items: [T]) -> T {
        items[below(items.count)]
    }

    /// A random subset (each element kept with probability 1/2), in the original order.
    public mutating func subset<T>(_ items: [T]) -> [T] {
        items.filter { _ in next() & 1 == 1 }
    }
}
