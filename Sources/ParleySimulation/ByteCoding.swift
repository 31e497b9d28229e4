/// Little-endian fixed-width encoding for the workload's commands and state-machine snapshots.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func write(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func write(_ value: Int) { write(UInt64(bitPattern: Int64(value))) }

    mutating func write(_ value: UInt8) { bytes.append(value) }

    mutating func write(optional value: Int?) {
        write(UInt8(value == nil ? 0 : 1))
        write(value ?? 0)
    }
}

/// Reads what `ByteWriter` wrote; throws on truncated input.
struct ByteReader {
    struct Truncated: Error {}
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func readUInt64() throws -> UInt64 {
        guard offset + 8 <= bytes.count else { throw Truncated() }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(index * 8) }
        offset += 8
        return value
    }

    mutating func readInt() throws -> Int { Int(Int64(bitPattern: try readUInt64())) }

    mutating func readByte() throws -> UInt8 {
        guard offset < bytes.count else { throw Truncated() }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readOptionalInt() throws -> Int? {
        let present = try readByte()
        let value = try readInt()
        return present == 0 ? nil : value
    }
}

/// FNV-1a: a stable digest (Swift's `Hasher` is seeded per process, so it cannot name states across runs).
enum StableDigest {
    static func of(_ bytes: [UInt8], seed: UInt64 = 0xCBF2_9CE4_8422_2325) -> UInt64 {
        var hash = seed
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
