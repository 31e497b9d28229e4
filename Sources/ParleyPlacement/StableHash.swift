import ParleyWire

/// Hashes that must give the same answer on every node, in every process and every version: they decide
/// where rooms live. Swift's `Hasher` is seeded per process, so it must never be used for placement.
public enum StableHash {
    /// FNV-1a over the UTF-8 bytes, then the 64-bit finalizer of MurmurHash3 to spread the bits (jump
    /// hashing and rendezvous weights need well-mixed keys; plain FNV is weak in its high bits).
    public static func of(_ string: String) -> UInt64 {
        mix(StableDigest.of(string.utf8))
    }

    /// MurmurHash3's fmix64: a bijection that turns nearby inputs into unrelated outputs.
    @inlinable public static func mix(_ value: UInt64) -> UInt64 {
        var k = value
        k ^= k >> 33
        k = k &* 0xFF51_AFD7_ED55_8CCD
        k ^= k >> 33
        k = k &* 0xC4CE_B9FE_1A85_EC53
        k ^= k >> 33
        return k
    }

    /// Lamping and Veach's jump consistent hash: a bucket in `0..<buckets`; growing the bucket count from
    /// n to n+1 moves only 1/(n+1) of the keys, all into the new bucket.
    public static func jumpConsistentHash(_ key: UInt64, buckets: Int) -> Int {
        precondition(buckets > 0, "at least one bucket")
        var key = key
        var b: Int64 = -1
        var j: Int64 = 0
        while j < Int64(buckets) {
            b = j
            key = key &* 2_862_933_555_777_941_757 &+ 1
            j = Int64(Double(b + 1) * (Double(Int64(1) << 31) / Double((key >> 33) + 1)))
        }
        return Int(b)
    }

    /// Rendezvous (highest random weight) order of `candidates` for `item`: the first `k` are the item's
    /// owners, and adding or removing a candidate changes only the items that candidate wins or held.
    public static func rendezvousOrder(item: UInt64, candidates: [UInt64]) -> [UInt64] {
        candidates
            .map { (candidate: $0, weight: mix(item ^ mix($0 &+ 0x9E37_79B9_7F4A_7C15))) }
            .sorted { $0.weight != $1.weight ? $0.weight > $1.weight : $0.candidate < $1.candidate }
            .map(\.candidate)
    }
}
