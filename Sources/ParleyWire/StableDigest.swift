/// FNV-1a: a digest that is the same in every process and version (Swift's `Hasher` is seeded per
/// process, so it can neither place rooms nor name states across runs).
public enum StableDigest {
    public static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325

    public static func of<Bytes: Sequence>(_ bytes: Bytes, seed: UInt64 = offsetBasis) -> UInt64 where Bytes.Element == UInt8 {
        var hash = seed
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
